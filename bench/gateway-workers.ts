/**
 * `evalgate serve --workers N` benchmark: throughput per worker count, scaling efficiency, the latency
 * a gateway process adds (p50 at concurrency 1 against the bare proxy and the mock directly) and peak
 * RSS per worker. The mock runs as a cluster of its own (bench/mock-cluster.ts) and the load comes from
 * several load processes (bench/load.ts each), so that neither limits the gateway. Prints one JSON.
 *
 *   npm run bench:gateway-workers -- --workers 1,2,4,8 --concurrency 64 --load-processes 4
 */
import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createInterface } from 'node:readline';
import { availableCpus } from '../src/cluster/primary.js';
import { arg, ROOT, rssMb, serverEntry } from './lib.js';
import { type LoadResult, runLoad } from './load.js';

const PEPPER = 'bench-pepper-0123456789abcdef';
const workerCounts = arg('workers', '1,2').split(',').map(Number);
const concurrency = Number(arg('concurrency', '64'));
const loadProcesses = Number(arg('load-processes', '2'));
const warmupMs = Number(arg('warmup', '1000'));
const durationMs = Number(arg('duration', '3000'));
const mockWorkers = Number(arg('mock-workers', String(Math.max(1, Math.min(4, availableCpus())))));

// A load process: runs bench/load.ts with the spec in LOAD_SPEC and prints its result.
if (process.env.LOAD_SPEC) {
  const result = await runLoad(JSON.parse(process.env.LOAD_SPEC));
  process.stdout.write(`${JSON.stringify(result)}\n`);
  process.exit(0);
}

function start(
  args: string[],
  env: Record<string, string>,
  pick: RegExp,
): Promise<{ child: ChildProcess; url: string }> {
  const child = spawn(process.execPath, args, {
    cwd: ROOT,
    env: { ...(process.env as Record<string, string>), ...env },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  return new Promise((resolve, reject) => {
    createInterface({ input: child.stdout! }).on('line', (line) => {
      const m = pick.exec(line);
      if (m) resolve({ child, url: m[1]! });
    });
    child.once('exit', (code) => reject(new Error(`${args.join(' ')} exited with ${code}`)));
  });
}

async function stop(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null) return;
  child.kill('SIGTERM');
  await new Promise((r) => child.once('exit', r));
}

/** Closed-loop load from `processes` load processes sharing `total` connections; merged figures. */
async function load(
  origin: string,
  headers: Record<string, string>,
  model: string,
  total: number,
  processes: number,
) {
  const n = Math.min(processes, total);
  const body = JSON.stringify({ model, messages: [{ role: 'user', content: 'Say hello.' }] });
  const results = await Promise.all(
    Array.from({ length: n }, (_, i) => {
      const spec = {
        origin,
        path: '/v1/chat/completions',
        headers: { 'content-type': 'application/json', ...headers },
        body,
        concurrency: Math.floor(total / n) + (i < total % n ? 1 : 0),
        warmupMs,
        durationMs,
      };
      const child = spawn(process.execPath, ['--import', 'tsx', 'bench/gateway-workers.ts'], {
        cwd: ROOT,
        env: { ...(process.env as Record<string, string>), LOAD_SPEC: JSON.stringify(spec) },
        stdio: ['ignore', 'pipe', 'inherit'],
      });
      return new Promise<LoadResult>((resolve, reject) => {
        let out = '';
        child.stdout!.on('data', (c: Buffer) => {
          out += c.toString();
        });
        child.once('exit', (code) =>
          code === 0 ? resolve(JSON.parse(out)) : reject(new Error(`load ${code}`)),
        );
      });
    }),
  );
  const r1 = (x: number) => Math.round(x * 1000) / 1000;
  return {
    rps: r1(results.reduce((a, r) => a + r.rps, 0)),
    // Each process's median, weighted by its requests: close to the median of all.
    p50_ms: r1(
      results.reduce((a, r) => a + r.p50_ms * r.requests, 0) /
        Math.max(
          1,
          results.reduce((a, r) => a + r.requests, 0),
        ),
    ),
    p99_ms: r1(Math.max(...results.map((r) => r.p99_ms))),
    errors: results.reduce((a, r) => a + r.errors, 0),
  };
}

function childrenOf(pid: number): number[] {
  return fs
    .readdirSync('/proc')
    .filter((e) => /^\d+$/.test(e))
    .filter((e) => {
      try {
        const stat = fs.readFileSync(`/proc/${e}/stat`, 'utf8');
        return Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]) === pid;
      } catch {
        return false;
      }
    })
    .map(Number);
}

async function main(): Promise<void> {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'evalgate-bench-'));
  const children: ChildProcess[] = [];
  const json = /^\{"url":"(http:\/\/[^"]+)"\}$/;
  try {
    const mock = await start(
      ['--import', 'tsx', 'bench/mock-cluster.ts'],
      { MOCK_WORKERS: String(mockWorkers) },
      json,
    );
    children.push(mock.child);
    const proxy = await start(['--import', 'tsx', 'bench/bare-proxy.ts', mock.url], {}, json);
    children.push(proxy.child);
    const env = { EVALGATE_DATA_DIR: dataDir, EVALGATE_KEY_PEPPER: PEPPER };
    const keyOutput = execFileSync(
      process.execPath,
      [...serverEntry(), 'keys', 'create', '--project', 'bench', '--name', 'bench'],
      { cwd: ROOT, env: { ...process.env, ...env } },
    ).toString();
    const auth = { authorization: `Bearer ${keyOutput.trim().split('\n').at(-1)!.trim()}` };
    const model = 'gpt-4o-mini';
    const direct = {
      c1: await load(mock.url, {}, model, 1, 1),
      cN: await load(mock.url, {}, model, concurrency, loadProcesses),
    };
    const bare = {
      c1: await load(proxy.url, {}, model, 1, 1),
      cN: await load(proxy.url, {}, model, concurrency, loadProcesses),
    };
    const perWorkers: Record<string, unknown> = {};
    let base = 0;
    for (const workers of workerCounts) {
      const gateway = await start(
        [...serverEntry(), 'serve', '--workers', String(workers)],
        {
          ...env,
          EVALGATE_PORT: '0',
          EVALGATE_LOG_LEVEL: 'warn',
          EVALGATE_RATE_LIMIT_PER_MINUTE: '10000000',
          EVALGATE_RATE_LIMIT_BURST: '10000000',
          OPENAI_API_KEY: 'sk-bench',
          OPENAI_BASE_URL: `${mock.url}/v1`,
        },
        /listening on (http:\/\/\S+)/,
      );
      const c1 = await load(gateway.url, auth, `openai/${model}`, 1, 1);
      const cN = await load(gateway.url, auth, `openai/${model}`, concurrency, loadProcesses);
      const pids = workers > 1 ? childrenOf(gateway.child.pid!) : [gateway.child.pid!];
      const rss = pids.map((pid) => rssMb(pid).peak);
      if (workers === workerCounts[0]) base = cN.rps / workers;
      perWorkers[String(workers)] = {
        c1,
        [`c${concurrency}`]: cN,
        scaling_efficiency: Math.round((cN.rps / (base * workers)) * 1000) / 1000,
        added_p50_ms_c1: {
          vs_bare_proxy: Math.round((c1.p50_ms - bare.c1.p50_ms) * 1000) / 1000,
          vs_direct: Math.round((c1.p50_ms - direct.c1.p50_ms) * 1000) / 1000,
        },
        peak_rss_mb_per_worker: rss,
        primary_peak_rss_mb: workers > 1 ? rssMb(gateway.child.pid!).peak : null,
      };
      await stop(gateway.child);
    }
    process.stdout.write(
      `${JSON.stringify(
        {
          machine: { cpus: os.cpus().length, available: availableCpus(), node: process.version },
          settings: {
            concurrency,
            load_processes: loadProcesses,
            mock_workers: mockWorkers,
            warmup_ms: warmupMs,
            duration_ms: durationMs,
          },
          direct: { c1: direct.c1, [`c${concurrency}`]: direct.cN },
          bare_proxy: { c1: bare.c1, [`c${concurrency}`]: bare.cN },
          evalgate_workers: perWorkers,
        },
        null,
        2,
      )}\n`,
    );
  } finally {
    for (const child of children.reverse()) await stop(child);
    fs.rmSync(dataDir, { recursive: true, force: true });
  }
}

await main();
