import { randomBytes } from 'node:crypto';
import { RemoteSandbox } from '../../src/scoring/code/remote.js';
import type { CodeScorerOptions } from '../../src/scoring/code/scorer.js';
import { type EvalgateProcess, startEvalgate } from './processes.js';

export interface SandboxRunnerProcess {
  url: string;
  token: string;
  process: EvalgateProcess;
  /** A client of this runner with the limits of `options` (as a server configured like them asks). */
  client(options: Pick<CodeScorerOptions, 'sandbox' | 'timeoutMs'>): RemoteSandbox;
  stop(): Promise<void>;
}

/**
 * `evalgate sandbox-runner` as a child process (the bundle users run) on a free loopback port, with a
 * fresh token and `env` on top (its data directory, pip's sources, limits).
 */
export async function startSandboxRunner(env: Record<string, string>): Promise<SandboxRunnerProcess> {
  const token = randomBytes(24).toString('hex');
  const child = await startEvalgate(
    ['sandbox-runner', '--port', '0'],
    { EVALGATE_SANDBOX_TOKEN: token, EVALGATE_CODE_WORKERS: '2', ...env },
    /listening on http:\/\/\S+:\d+ /,
    60_000,
  );
  const url = /listening on (http:\/\/\S+:\d+) /.exec(child.output())![1]!;
  const clients: RemoteSandbox[] = [];
  return {
    url,
    token,
    process: child,
    client(options) {
      const client = new RemoteSandbox({
        url,
        token,
        limits: options.sandbox.limits,
        timeoutMs: options.timeoutMs,
      });
      clients.push(client);
      return client;
    },
    async stop() {
      await Promise.all(clients.map((c) => c.close()));
      await child.stop();
    },
  };
}
