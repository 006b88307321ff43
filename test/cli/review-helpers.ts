import { spawn } from 'node:child_process';
import type { Harness } from '../helpers/harness.js';
import { CLI, type CliResult, cliEnv, ROOT } from './cli-helpers.js';

/** Runs the CLI with `input` piped on its stdin (one answer a line), as another key when given. */
export function evalgateWithInput(
  h: Harness,
  args: string[],
  input: string,
  apiKey?: string,
): Promise<CliResult> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [...CLI, ...args], {
      cwd: ROOT,
      env: cliEnv(h, apiKey ? { EVALGATE_API_KEY: apiKey } : {}),
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => {
      stdout += d.toString();
    });
    child.stderr.on('data', (d: Buffer) => {
      stderr += d.toString();
    });
    child.on('error', reject);
    child.on('close', (code) => resolve({ code: code ?? 1, stdout, stderr }));
    child.stdin.end(input);
  });
}
