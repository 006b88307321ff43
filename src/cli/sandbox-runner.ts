import { randomBytes } from 'node:crypto';
import { chownSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import type { Command } from 'commander';
import { withFileSettings } from '../config-files.js';
import { ConfigError, int, sandboxTokenOf, text } from '../config-sections.js';
import { createSandboxRunner } from '../scoring/code/runner-server.js';
import { codeScorerOptions, createCodeRuntime, sandboxStatusOf } from '../scoring/code/scorer.js';
import { configFrom, onStop } from './context.js';

/**
 * The token in `file`, written there first (a new random one, mode 0600, owned by the folder's owner)
 * when the file does not exist.
 */
function tokenFromFile(file: string): string {
  try {
    writeFileSync(file, `${randomBytes(32).toString('base64url')}\n`, { mode: 0o600, flag: 'wx' });
    // Run as root, the file takes the owner of its folder: the clients' user (a shared volume's owner).
    if (process.getuid?.() === 0) {
      const folder = statSync(path.dirname(file));
      chownSync(file, folder.uid, folder.gid);
    }
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EEXIST') {
      throw new ConfigError(
        `--token-file: cannot write ${file}: ${(err as NodeJS.ErrnoException).code ?? err}`,
      );
    }
  }
  const token = sandboxTokenOf(readFileSync(file, 'utf8'));
  if (token === null) throw new ConfigError(`--token-file: ${file} is empty`);
  return token;
}

export function registerSandboxRunnerCommand(program: Command): void {
  program
    .command('sandbox-runner')
    .description(
      'run code evaluators for servers and workers that cannot sandbox them (EVALGATE_SANDBOX_URL); ' +
        'needs EVALGATE_SANDBOX_TOKEN, no database',
    )
    .option('--host <host>', 'address to listen on (EVALGATE_SANDBOX_RUNNER_HOST; default 127.0.0.1)')
    .option('--port <port>', 'port to listen on (EVALGATE_SANDBOX_RUNNER_PORT; default 8090)')
    .option(
      '--token-file <file>',
      'the token is in this file, made (random, readable by its owner only) when missing; clients read it as EVALGATE_SANDBOX_TOKEN_FILE',
    )
    .action(async (opts: { host?: string; port?: string; tokenFile?: string }, command: Command) => {
      const env = withFileSettings(process.env);
      const token = opts.tokenFile
        ? tokenFromFile(opts.tokenFile)
        : sandboxTokenOf(env.EVALGATE_SANDBOX_TOKEN);
      if (token === null) {
        throw new ConfigError(
          'the sandbox runner refuses requests without its token: set EVALGATE_SANDBOX_TOKEN or EVALGATE_SANDBOX_TOKEN_FILE',
        );
      }
      const host = text(opts.host) ?? text(env.EVALGATE_SANDBOX_RUNNER_HOST) ?? '127.0.0.1';
      const port = int('port', opts.port ?? env.EVALGATE_SANDBOX_RUNNER_PORT, 8090, 0, 65535);
      // Only the code evaluator settings and the data directory (its virtualenvs) are used: no database.
      const config = configFrom(command);
      const options = codeScorerOptions(config);
      const code = { ...options, runtime: createCodeRuntime(options) };
      const app = createSandboxRunner({ code, token });
      await app.listen({ host, port });
      const address = app.server.address();
      const bound = typeof address === 'object' && address ? address.port : port;
      const status = await sandboxStatusOf(code);
      const sandbox = status.available
        ? 'sandbox available'
        : `sandbox UNAVAILABLE: ${status.reason ?? 'unknown'}${config.codeEvaluators.unsafe ? ' (EVALGATE_UNSAFE_CODE_EVALUATORS=1: rlimits only)' : ''}`;
      process.stdout.write(
        `Evalgate sandbox runner listening on http://${host.includes(':') ? `[${host}]` : host}:${bound} (${sandbox})\n`,
      );
      onStop(async () => {
        await app.close();
      });
    });
}
