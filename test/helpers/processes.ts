import { type ChildProcess, spawn } from 'node:child_process';
import fs from 'node:fs';
import { fileURLToPath } from 'node:url';
import { cliArgs } from './cli-bundle.js';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));

export interface EvalgateProcess {
  child: ChildProcess;
  pid: number;
  /** Everything the process wrote so far (stdout and stderr). */
  output(): string;
  /** SIGKILL: no shutdown, no lease given back, no flush. */
  kill(): Promise<void>;
  /** SIGTERM and wait for the exit. */
  stop(): Promise<void>;
}

/**
 * Starts `evalgate <args>` as a child process from the sources, with `env` on top of this process's
 * environment minus its EVALGATE_* settings, and resolves once its output matches `ready`.
 */
export async function startEvalgate(
  args: string[],
  env: Record<string, string>,
  ready: RegExp,
  timeoutMs = 30_000,
): Promise<EvalgateProcess> {
  const base = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith('EVALGATE_')));
  const child = spawn(process.execPath, [...cliArgs(), ...args], {
    cwd: ROOT,
    env: { ...base, EVALGATE_LOG_LEVEL: 'warn', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let text = '';
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(
      () => reject(new Error(`evalgate ${args[0]} did not start:\n${text}`)),
      timeoutMs,
    );
    const onData = (chunk: Buffer) => {
      text += chunk.toString();
      if (ready.test(text)) {
        clearTimeout(timer);
        resolve();
      }
    };
    child.stdout?.on('data', onData);
    child.stderr?.on('data', onData);
    child.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`evalgate ${args[0]} exited with ${code}:\n${text}`));
    });
  });
  return {
    child,
    pid: child.pid ?? 0,
    output: () => text,
    async kill() {
      if (child.exitCode === null) child.kill('SIGKILL');
      await exited;
    },
    async stop() {
      if (child.exitCode === null) child.kill('SIGTERM');
      await exited;
    },
  };
}

/** The processes descended from `root` whose command line contains `needle` (Linux /proc). */
export function descendants(root: number, needle: string): number[] {
  const parent = new Map<number, number>();
  const commands = new Map<number, string>();
  for (const entry of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = fs.readFileSync(`/proc/${entry}/stat`, 'utf8');
      // The command name is in parentheses and may hold spaces: the fields after it are fixed.
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      parent.set(Number(entry), Number(fields[1]));
      commands.set(Number(entry), fs.readFileSync(`/proc/${entry}/cmdline`, 'utf8').replaceAll('\0', ' '));
    } catch {
      // The process ended while we looked.
    }
  }
  const out: number[] = [];
  for (const [pid, command] of commands) {
    if (!command.includes(needle)) continue;
    for (let p = parent.get(pid); p !== undefined && p > 1; p = parent.get(p)) {
      if (p === root) {
        out.push(pid);
        break;
      }
    }
  }
  return out;
}
