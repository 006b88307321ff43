/**
 * `npm run bench:startup`: what a start of `evalgate serve` costs, from the build, on SQLite. Prints one
 * JSON document: CPU seconds (user + system, from /proc) and wall time until the first `/healthz` answer
 * and until the first proxied call (a registered model on a loopback mock), and resident memory idle after
 * the start and after 10,000 calls — each on a fresh data directory and again on the database a start
 * left behind, as the median (and range) of `--starts` starts of each.
 *
 *   npm run bench:startup                       # 5 starts of each, 10,000 calls after the last one
 *   npm run bench:startup -- --starts 3 --calls 2000
 */
import { type ChildProcess, spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import { arg, cpuSeconds, ROOT, rssMb, serverEntry, startMockProcess } from './lib.js';
import { runLoad } from './load.js';

const starts = Number(arg('starts', '5'));
const calls = Number(arg('calls', '10000'));

interface Start {
  healthz_cpu_s: number;
  healthz_wall_s: number;
  first_call_cpu_s: number;
  first_call_wall_s: number;
  idle_rss_mb: number;
}

function spawnServe(dataDir: string): {
  child: ChildProcess;
  output: Promise<{ url: string; key: string | null }>;
} {
  const child = spawn(process.execPath, [...serverEntry(), 'serve', '--port', '0'], {
    cwd: ROOT,
    env: {
      ...(process.env as Record<string, string>),
      EVALGATE_DATA_DIR: dataDir,
      EVALGATE_LOG_LEVEL: 'warn',
      // The calls after the last start run at 1,000 a second: past the default rate limit, which would
      // answer a third of them 429 and measure the refusal instead of the call.
      EVALGATE_RATE_LIMIT_PER_MINUTE: '10000000',
      EVALGATE_RATE_LIMIT_BURST: '10000000',
    },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const output = new Promise<{ url: string; key: string | null }>((resolve, reject) => {
    let text = '';
    child.stdout!.setEncoding('utf8').on('data', (chunk: string) => {
      text += chunk;
      const url = /listening on (http:\/\/\S+)/.exec(text)?.[1];
      const key = /^\s+(eg_\S+)\s*$/m.exec(text)?.[1] ?? null;
      // A first start prints its key after the address; a later one prints none.
      if (url && (key || /database: /.test(text))) setTimeout(() => resolve({ url, key: key ?? null }), 50);
    });
    child.once('exit', (code) => reject(new Error(`evalgate serve exited with ${code} before it was ready`)));
  });
  return { child, output };
}

async function stop(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null) return;
  child.kill('SIGTERM');
  await new Promise((r) => child.once('exit', r));
}

/** Polls until the server answers; the address is read from its first lines. */
async function healthz(child: ChildProcess, output: Promise<{ url: string }>): Promise<string> {
  const { url } = await output;
  for (;;) {
    try {
      if ((await fetch(`${url}/healthz`)).ok) return url;
    } catch {
      // Not listening yet.
    }
    if (child.exitCode !== null) throw new Error('evalgate serve exited');
    await sleep(10);
  }
}

async function call(url: string, key: string): Promise<void> {
  const res = await fetch(`${url}/v1/chat/completions`, {
    method: 'POST',
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    body: JSON.stringify({ model: 'startup-mock', messages: [{ role: 'user', content: 'hi' }] }),
  });
  if (!res.ok) throw new Error(`the first call answered ${res.status}: ${await res.text()}`);
}

async function oneStart(dataDir: string, known: { key: string | null }, mockBase: string): Promise<Start> {
  const t0 = performance.now();
  const { child, output } = spawnServe(dataDir);
  const url = await healthz(child, output);
  const healthzWall = (performance.now() - t0) / 1000;
  const healthzCpu = cpuSeconds(child.pid!);
  const { key } = await output;
  if (key) {
    known.key = key;
    const res = await fetch(`${url}/v1/models`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: JSON.stringify({
        label: 'startup-mock',
        provider: 'openai-compatible',
        base_url: mockBase,
        upstream_model: 'mock',
      }),
    });
    if (!res.ok) throw new Error(`registering the mock answered ${res.status}: ${await res.text()}`);
  }
  const t1 = performance.now();
  await call(url, known.key!);
  const firstCallWall = healthzWall + (performance.now() - t1) / 1000;
  const firstCallCpu = cpuSeconds(child.pid!);
  await sleep(500);
  const start: Start = {
    healthz_cpu_s: healthzCpu,
    healthz_wall_s: healthzWall,
    first_call_cpu_s: firstCallCpu,
    first_call_wall_s: firstCallWall,
    idle_rss_mb: rssMb(child.pid!).now,
  };
  await stop(child);
  return start;
}

function summary(values: number[]): { median: number; min: number; max: number } {
  const sorted = [...values].sort((a, b) => a - b);
  const round = (v: number) => Math.round(v * 1000) / 1000;
  return {
    median: round(sorted[Math.floor(sorted.length / 2)]!),
    min: round(sorted[0]!),
    max: round(sorted.at(-1)!),
  };
}

function summarise(runs: Start[]) {
  const keys = Object.keys(runs[0]!) as (keyof Start)[];
  return Object.fromEntries(keys.map((k) => [k, summary(runs.map((r) => r[k]))]));
}

async function main() {
  serverEntry();
  const mock = await startMockProcess({});
  const fresh: Start[] = [];
  const existing: Start[] = [];
  let afterCalls: { rss_mb: number; calls: number; errors: number; cpu_us_per_call: number } | null = null;
  try {
    for (let i = 0; i < starts; i++) {
      const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'evalgate-startup-'));
      const known = { key: null as string | null };
      try {
        // Alternating: a fresh database, then the one it left.
        fresh.push(await oneStart(dataDir, known, mock.baseUrl));
        existing.push(await oneStart(dataDir, known, mock.baseUrl));
        if (i === starts - 1 && calls > 0) {
          const { child, output } = spawnServe(dataDir);
          const url = await healthz(child, output);
          const cpu0 = cpuSeconds(child.pid!);
          // `calls` calls at 1,000 a second (open loop), then a second for the writer to settle.
          const load = await runLoad({
            origin: url,
            path: '/v1/chat/completions',
            headers: { authorization: `Bearer ${known.key}`, 'content-type': 'application/json' },
            body: JSON.stringify({ model: 'startup-mock', messages: [{ role: 'user', content: 'hi' }] }),
            concurrency: 64,
            warmupMs: 0,
            durationMs: calls,
            ratePerS: 1000,
          });
          await sleep(1000);
          afterCalls = {
            calls: load.completed,
            errors: load.errors,
            rss_mb: rssMb(child.pid!).now,
            cpu_us_per_call: Math.round(
              ((cpuSeconds(child.pid!) - cpu0) / Math.max(1, load.completed)) * 1e6,
            ),
          };
          await stop(child);
        }
      } finally {
        fs.rmSync(dataDir, { recursive: true, force: true });
      }
    }
  } finally {
    await mock.stop();
  }
  console.log(
    JSON.stringify(
      {
        bench: 'startup',
        node: process.version,
        cores: os.cpus().length,
        loadavg: os.loadavg().map((l) => Math.round(l * 100) / 100),
        starts,
        fresh_database: summarise(fresh),
        existing_database: summarise(existing),
        after_calls: afterCalls,
        targets: { healthz_cpu_s: 0.5, idle_rss_mb: 120 },
      },
      null,
      2,
    ),
  );
}

await main();
