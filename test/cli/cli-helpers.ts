import { execFile } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { MockRequest } from '../fixtures/mock-upstream.js';
import { cliArgs } from '../helpers/cli-bundle.js';
import type { Harness } from '../helpers/harness.js';

/** Running the API commands of the CLI as child processes against a test harness. */

export const ROOT = fileURLToPath(new URL('../..', import.meta.url));
export const CLI = cliArgs();

export interface CliResult {
  code: number;
  stdout: string;
  stderr: string;
}

/** The CLI's environment: the harness's URL and admin key, none of this process's EVALGATE_* settings. */
export function cliEnv(h: Harness, extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  const env = Object.fromEntries(
    Object.entries(process.env).filter(([k]) => !k.startsWith('EVALGATE_') && k !== 'GITHUB_STEP_SUMMARY'),
  );
  return { ...env, EVALGATE_BASE_URL: h.url, EVALGATE_API_KEY: h.admin.key, ...extra };
}

export function evalgate(
  h: Harness,
  args: string[],
  extraEnv: Record<string, string> = {},
): Promise<CliResult> {
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      [...CLI, ...args],
      { cwd: ROOT, env: cliEnv(h, extraEnv), maxBuffer: 64 * 1024 * 1024 },
      (err, stdout, stderr) => {
        const code = err ? (typeof err.code === 'number' ? err.code : 1) : 0;
        resolve({ code, stdout, stderr });
      },
    );
  });
}

/** Runs the CLI and parses its stdout as JSON, failing with its stderr when it did not succeed. */
export async function evalgateJson<T = any>(h: Harness, args: string[]): Promise<T> {
  const res = await evalgate(h, [...args, '--json']);
  if (res.code !== 0) throw new Error(`evalgate ${args.join(' ')} exited ${res.code}: ${res.stderr}`);
  return JSON.parse(res.stdout) as T;
}

const between = (text: string, tag: string) => new RegExp(`${tag}<<([\\s\\S]*?)>>`).exec(text)?.[1] ?? '';

/**
 * The scripted provider: generators answer `<model>:<question>`; the judge scores 1 when OUT equals EXP
 * (and, without EXP in the prompt, when OUT mentions "good").
 */
export function scriptedReply(req: MockRequest) {
  const model: string = req.body.model;
  const text = req.lastUserText;
  if (model !== 'judge-model') return `${model}:${text}`;
  const out = between(text, 'OUT');
  const expected = text.includes('EXP<<') ? between(text, 'EXP') : null;
  const score = expected === null ? (out.includes('good') ? 1 : 0) : out === expected ? 1 : 0;
  return { json: { score, reasoning: 'scripted' } };
}

/** Registers the judge and generator models of the scripted mock, and a container. */
export async function seed(h: Harness, mockUrl: string, container: string): Promise<void> {
  const register = async (label: string, upstream: string, prices = {}) => {
    const res = await h.call('POST', '/v1/models', {
      body: { label, provider: 'openai-compatible', base_url: mockUrl, upstream_model: upstream, ...prices },
    });
    if (res.status !== 201) throw new Error(`model ${label}: ${res.text}`);
  };
  await register('judge', 'judge-model', { input_price_per_mtok: 1, output_price_per_mtok: 2 });
  await register('gen-a', 'gen-a');
  await register('gen-b', 'gen-b');
  const res = await h.call('POST', '/v1/containers', { body: { label: container } });
  if (res.status !== 201) throw new Error(`container: ${res.text}`);
}

/** Writes a JSON-lines file of rows and returns its path. */
export function jsonl(dir: string, name: string, rows: unknown[]): string {
  const file = path.join(dir, name);
  fs.writeFileSync(file, rows.map((r) => `${JSON.stringify(r)}\n`).join(''));
  return file;
}
