import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { testDbKind } from '../helpers/databases.js';
import { type Harness, startHarness } from '../helpers/harness.js';
import { tempDir } from '../helpers/temp.js';
import { CLI, cliEnv, ROOT } from './cli-helpers.js';

const ROWS = 1_000_000;
let h: Harness;
let dir: string;

beforeAll(async () => {
  if (testDbKind() === 'postgres') return;
  h = await startHarness();
  dir = tempDir('evalgate-cli-').dir;
});
afterAll(async () => {
  await h?.close();
  if (dir) fs.rmSync(dir, { recursive: true, force: true });
});

/** A 1,000,000-row JSON-lines file (about 60 MB), written in large chunks. */
async function writeRows(file: string): Promise<number> {
  const out = fs.createWriteStream(file);
  let chunk = '';
  for (let i = 0; i < ROWS; i++) {
    chunk += `{"id":"row-${i}","input":"Question ${i}: what is ${i} plus ${i}?","expected":"${i + i}"}\n`;
    if (chunk.length >= 1 << 20) {
      if (!out.write(chunk)) await new Promise<void>((resolve) => out.once('drain', () => resolve()));
      chunk = '';
    }
  }
  out.end(chunk);
  await new Promise<void>((resolve) => out.once('finish', () => resolve()));
  return fs.statSync(file).size;
}

/** The peak resident set size (VmHWM) of a live process, in kB; null once it is gone. */
function peakKb(pid: number): number | null {
  try {
    const status = fs.readFileSync(`/proc/${pid}/status`, 'utf8');
    const m = /^VmHWM:\s+(\d+) kB/m.exec(status);
    return m ? Number(m[1]) : null;
  } catch {
    return null;
  }
}

describe.skipIf(testDbKind() === 'postgres' || process.platform !== 'linux')('datasets upload', () => {
  it('streams a 1,000,000-row JSON-lines file with the CLI under 150 MB', { timeout: 180_000 }, async () => {
    const file = path.join(dir, 'million.jsonl');
    const size = await writeRows(file);
    expect(size).toBeGreaterThan(50 * 1024 * 1024);

    const child = spawn(
      process.execPath,
      [...CLI, 'datasets', 'upload', file, '--label', 'million', '--json'],
      {
        cwd: ROOT,
        env: cliEnv(h, { EVALGATE_TIMEOUT: '120' }),
        stdio: ['ignore', 'pipe', 'pipe'],
      },
    );
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (d: string) => {
      stdout += d;
    });
    child.stderr.setEncoding('utf8').on('data', (d: string) => {
      stderr += d;
    });
    // VmHWM only grows, so its last reading before the exit is the peak (within the last 50 ms, which
    // the process spends printing its answer).
    let peak = 0;
    const sampler = setInterval(() => {
      peak = Math.max(peak, peakKb(child.pid!) ?? 0);
    }, 50);
    const code = await new Promise<number | null>((resolve) => child.on('exit', resolve));
    clearInterval(sampler);

    expect(code, stderr).toBe(0);
    const dataset = JSON.parse(stdout);
    expect(dataset).toMatchObject({ object: 'dataset', label: 'million', item_count: ROWS });
    expect(peak).toBeGreaterThan(0);
    expect(peak / 1024, `CLI peak RSS ${Math.round(peak / 1024)} MB`).toBeLessThan(150);
    const stored = await h.call('GET', '/v1/datasets/million');
    expect(stored.body.item_count).toBe(ROWS);
    const last = await h.call('GET', `/v1/datasets/million/items?range=${ROWS - 1}:${ROWS}`);
    expect(last.body.data[0].data).toMatchObject({ id: `row-${ROWS - 1}`, expected: String(2 * (ROWS - 1)) });
  });
});
