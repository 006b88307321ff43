/**
 * `evalgate serve --workers N`, measured: throughput per worker count, plain and streamed, its speed-up
 * over one worker and scaling efficiency, one worker against the bare proxy (the per-process floor), the
 * latency a gateway process adds (p50 at concurrency 1 against the bare proxy and the mock directly),
 * and peak RSS per worker. The bare proxy and the mock are measured again right after each worker count,
 * and the comparisons are against those paired figures. The load processes of one load all start at
 * the same moment, so that their measured windows are the same and their requests/s add up. The mock runs as a cluster of its own (bench/mock-cluster.ts) and the load
 * comes from several load processes (bench/load.ts each), so that neither limits the gateway. Prints
 * one JSON document. `npm run bench:gateway -- --workers …` runs it.
 *
 *   npm run bench:gateway -- --workers 1,2,4,8 --concurrency 64 --load-processes 4 --mock-workers 4
 *   npm run bench:gateway -- --workers 1,2 --rate 1000   # the fixed request rate of the CPU figures
 *
 * CPU per call, the figure that holds on any number of cores, is measured at a fixed request rate
 * (`--rate`, default 1,000/s, one load process): the CPU seconds of the primary and of each worker over
 * the load, divided by the calls made, with the primary's share; the bare proxy at the same rate is the
 * per-call floor, measured right after each worker count.
 *
 * On a machine with fewer cores than workers + mock workers + load processes, the figures tell how the
 * processes share the cores, not how the gateway scales: the report gives the machine's cores.
 */
import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { availableCpus } from '../src/cluster/primary.js';
import { arg, cpuSeconds, jsonUrl, ROOT, rssMb, serverEntry, startProcess, stopProcess } from './lib.js';
import { type LoadResult, type LoadSpec, runLoad } from './load.js';

type Mode = 'plain' | 'stream';

const PEPPER = 'bench-pepper-0123456789abcdef';
const cpus = availableCpus();
const workerCounts = arg('workers', '1,2').split(',').map(Number);
const modes = arg('mode', 'plain,stream').split(',') as Mode[];
const concurrency = Number(arg('concurrency', '64'));
const loadProcesses = Number(arg('load-processes', String(Math.max(1, Math.min(4, Math.floor(cpus / 4))))));
const mockWorkers = Number(arg('mock-workers', String(Math.max(1, Math.min(4, Math.floor(cpus / 4))))));
const warmupMs = Number(arg('warmup', '1000'));
const durationMs = Number(arg('duration', '3000'));
const ratePerS = Number(arg('rate', '1000'));

/** The figures one load gives, merged over its load processes. */
interface Merged {
  rps: number;
  p50_ms: number;
  p99_ms: number;
  ttfb_p50_ms: number;
  errors: number;
}

// A load process: runs bench/load.ts with the spec in LOAD_SPEC and prints its result.
if (process.env.LOAD_SPEC) {
  const result = await runLoad(JSON.parse(process.env.LOAD_SPEC));
  process.stdout.write(`${JSON.stringify(result)}\n`);
  process.exit(0);
}

const r3 = (x: number) => Math.round(x * 1000) / 1000;

/** How far ahead of now the load processes of one load are told to start (they take ~1 s to start). */
const START_LEAD_MS = 2000;

/** Runs one load process (this file with LOAD_SPEC) and gives its result. */
function loadProcess(spec: LoadSpec): Promise<LoadResult> {
  const child = spawn(process.execPath, ['--import', 'tsx', 'bench/gateway-workers.ts'], {
    cwd: ROOT,
    env: { ...(process.env as Record<string, string>), LOAD_SPEC: JSON.stringify(spec) },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  return new Promise((resolve, reject) => {
    let out = '';
    child.stdout!.on('data', (c: Buffer) => {
      out += c.toString();
    });
    child.once('exit', (code) => (code === 0 ? resolve(JSON.parse(out)) : reject(new Error(`load ${code}`))));
  });
}

/** Closed-loop load from `processes` load processes sharing `total` connections; merged figures. */
async function load(
  origin: string,
  headers: Record<string, string>,
  model: string,
  mode: Mode,
  total: number,
  processes: number,
): Promise<Merged> {
  const n = Math.min(processes, total);
  const body = JSON.stringify({
    model,
    messages: [{ role: 'user', content: 'Say hello.' }],
    ...(mode === 'stream' ? { stream: true } : {}),
  });
  // Every load process measures the same window: they start loading together, once all are up.
  const startAt = Date.now() + START_LEAD_MS;
  const results = await Promise.all(
    Array.from({ length: n }, (_, i) =>
      loadProcess({
        startAt,
        origin,
        path: '/v1/chat/completions',
        headers: { 'content-type': 'application/json', ...headers },
        body,
        concurrency: Math.floor(total / n) + (i < total % n ? 1 : 0),
        warmupMs,
        durationMs,
      }),
    ),
  );
  const requests = Math.max(
    1,
    results.reduce((a, r) => a + r.requests, 0),
  );
  // Each process's median, weighted by its requests: close to the median of all.
  const weighted = (pick: (r: LoadResult) => number) =>
    r3(results.reduce((a, r) => a + pick(r) * r.requests, 0) / requests);
  return {
    rps: results.reduce((a, r) => a + r.rps, 0),
    p50_ms: weighted((r) => r.p50_ms),
    p99_ms: r3(Math.max(...results.map((r) => r.p99_ms))),
    ttfb_p50_ms: weighted((r) => r.ttfb_p50_ms),
    errors: results.reduce((a, r) => a + r.errors, 0),
  };
}

/** The processes whose parent is `pid` (the cluster's workers). */
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

/** Concurrency 1 and `concurrency`, for each mode. */
type Figures = Record<Mode, { c1: Merged; cN: Merged }>;

async function measure(origin: string, headers: Record<string, string>, model: string): Promise<Figures> {
  const out = {} as Figures;
  for (const mode of modes) {
    out[mode] = {
      c1: await load(origin, headers, model, mode, 1, 1),
      cN: await load(origin, headers, model, mode, concurrency, loadProcesses),
    };
  }
  return out;
}

/** p50 at concurrency 1 only, for each mode (the direct figures paired with each worker count). */
async function measureC1(origin: string, headers: Record<string, string>, model: string) {
  const out = {} as Record<Mode, Merged>;
  for (const mode of modes) out[mode] = await load(origin, headers, model, mode, 1, 1);
  return out;
}

/**
 * CPU per call at `ratePerS` (one load process), per mode: µs of the primary and of the workers (their
 * sum is the gateway's), and the primary's share. `workers` empty: `primary` is the only process.
 */
async function cpuAtRate(
  origin: string,
  headers: Record<string, string>,
  model: string,
  primary: number,
  workers: number[],
) {
  const out: Record<string, unknown> = {};
  for (const mode of modes) {
    const body = JSON.stringify({
      model,
      messages: [{ role: 'user', content: 'Say hello.' }],
      ...(mode === 'stream' ? { stream: true } : {}),
    });
    const pids = [primary, ...workers];
    const before = pids.map((pid) => cpuSeconds(pid));
    const result = await loadProcess({
      origin,
      path: '/v1/chat/completions',
      headers: { 'content-type': 'application/json', ...headers },
      body,
      concurrency,
      warmupMs,
      durationMs,
      ratePerS,
    });
    const used = pids.map((pid, i) => cpuSeconds(pid) - before[i]!);
    const calls = Math.max(1, result.completed);
    const total = used.reduce((a, b) => a + b, 0);
    out[mode] = {
      rps: result.rps,
      calls: result.completed,
      errors: result.errors,
      cpu_us_per_call: Math.round((total / calls) * 1e6),
      primary_us_per_call: Math.round((used[0]! / calls) * 1e6),
      workers_us_per_call: used.slice(1).map((u) => Math.round((u / calls) * 1e6)),
      primary_share: total > 0 ? r3(used[0]! / total) : null,
    };
  }
  return out;
}

const named = (f: Figures) =>
  Object.fromEntries(Object.entries(f).map(([mode, { c1, cN }]) => [mode, { c1, [`c${concurrency}`]: cN }]));

async function main(): Promise<void> {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'evalgate-bench-'));
  const children: ChildProcess[] = [];
  try {
    const mock = await startProcess(
      ['--import', 'tsx', 'bench/mock-cluster.ts'],
      { MOCK_WORKERS: String(mockWorkers) },
      jsonUrl,
    );
    children.push(mock.child);
    const proxy = await startProcess(['--import', 'tsx', 'bench/bare-proxy.ts', mock.url], {}, jsonUrl);
    children.push(proxy.child);
    const env = { EVALGATE_DATA_DIR: dataDir, EVALGATE_KEY_PEPPER: PEPPER };
    const keyOutput = execFileSync(
      process.execPath,
      [...serverEntry(), 'keys', 'create', '--project', 'bench', '--name', 'bench'],
      { cwd: ROOT, env: { ...process.env, ...env } },
    ).toString();
    const auth = { authorization: `Bearer ${keyOutput.trim().split('\n').at(-1)!.trim()}` };
    const model = 'gpt-4o-mini';
    const direct = await measure(mock.url, {}, model);
    const bare = await measure(proxy.url, {}, model);
    const perWorkers: Record<string, unknown> = {};
    const byWorkers = new Map<number, Figures>();
    // The bare proxy (and the mock directly, at concurrency 1) measured again right after each worker
    // count: the comparisons with the gateway are within a pair taken minutes apart at most.
    const bareAfter = new Map<number, Figures>();
    const directAfter = new Map<number, Record<Mode, Merged>>();
    const rss: Record<string, { workers: number[]; primary: number | null }> = {};
    type AtRate = Awaited<ReturnType<typeof cpuAtRate>>;
    const cpuByWorkers = new Map<number, { gateway: AtRate; bare: AtRate }>();
    for (const workers of workerCounts) {
      const gateway = await startProcess(
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
        (line) => /listening on (http:\/\/\S+)/.exec(line)?.[1] ?? null,
      );
      children.push(gateway.child);
      const figures = await measure(gateway.url, auth, `openai/${model}`);
      byWorkers.set(workers, figures);
      const pids = workers > 1 ? childrenOf(gateway.child.pid!) : [gateway.child.pid!];
      // `serve --workers 1` is one process (the primary serves); more: a primary and its workers.
      const atRate = await cpuAtRate(
        gateway.url,
        auth,
        `openai/${model}`,
        gateway.child.pid!,
        workers > 1 ? pids : [],
      );
      rss[String(workers)] = {
        workers: pids.map((pid) => rssMb(pid).peak),
        primary: workers > 1 ? rssMb(gateway.child.pid!).peak : null,
      };
      await stopProcess(gateway.child);
      const pairedBare = await measure(proxy.url, {}, model);
      const pairedDirect = await measureC1(mock.url, {}, model);
      const bareAtRate = await cpuAtRate(proxy.url, {}, model, proxy.child.pid!, []);
      bareAfter.set(workers, pairedBare);
      directAfter.set(workers, pairedDirect);
      cpuByWorkers.set(workers, { gateway: atRate, bare: bareAtRate });
      perWorkers[String(workers)] = {
        ...named(figures),
        bare_proxy_paired: named(pairedBare),
        direct_c1_paired: pairedDirect,
        [`cpu_per_call_at_${ratePerS}_per_s`]: atRate,
        [`bare_proxy_cpu_per_call_at_${ratePerS}_per_s`]: bareAtRate,
      };
    }

    // Per mode: throughput by worker count, against the smallest count measured (1 unless told otherwise).
    const first = workerCounts[0]!;
    const summary: Record<string, unknown> = {};
    for (const mode of modes) {
      const base = byWorkers.get(first)![mode].cN.rps;
      const rps: Record<string, number> = {};
      const speedup: Record<string, number> = {};
      const efficiency: Record<string, number> = {};
      for (const [workers, f] of byWorkers) {
        rps[workers] = f[mode].cN.rps;
        speedup[workers] = r3(f[mode].cN.rps / base);
        efficiency[workers] = r3(f[mode].cN.rps / base / (workers / first));
      }
      const one = byWorkers.get(1)?.[mode];
      const oneBare = bareAfter.get(1)?.[mode];
      summary[mode] = {
        [`rps_c${concurrency}`]: rps,
        speedup_vs_first: speedup,
        scaling_efficiency: efficiency,
        bare_proxy_rps: bare[mode].cN.rps,
        // Against the bare proxy measured right after the same worker count.
        one_worker_vs_bare_proxy: one && oneBare ? r3(one.cN.rps / oneBare.cN.rps) : null,
        added_p50_ms_c1_vs_bare_proxy: Object.fromEntries(
          [...byWorkers].map(([w, f]) => [w, r3(f[mode].c1.p50_ms - bareAfter.get(w)![mode].c1.p50_ms)]),
        ),
        added_p50_ms_c1_vs_direct: Object.fromEntries(
          [...byWorkers].map(([w, f]) => [w, r3(f[mode].c1.p50_ms - directAfter.get(w)![mode].p50_ms)]),
        ),
      };
    }
    // CPU per call at the fixed rate, per worker count: the gateway's (primary + workers), the primary's
    // share, and the ratio to the bare proxy measured at the same rate right after.
    summary[`cpu_per_call_at_${ratePerS}_per_s`] = Object.fromEntries(
      [...cpuByWorkers].map(([w, { gateway, bare: floor }]) => [
        w,
        Object.fromEntries(
          modes.map((mode) => {
            const g = gateway[mode] as { cpu_us_per_call: number; primary_share: number | null };
            const b = floor[mode] as { cpu_us_per_call: number };
            return [
              mode,
              {
                us: g.cpu_us_per_call,
                primary_share: g.primary_share,
                bare_proxy_us: b.cpu_us_per_call,
                vs_bare_proxy: r3(g.cpu_us_per_call / Math.max(1, b.cpu_us_per_call)),
              },
            ];
          }),
        ),
      ]),
    );
    summary.peak_rss_mb = rss;
    summary.targets = {
      speedup_8_workers: '>= 6',
      one_worker_vs_bare_proxy: { plain: '>= 0.9', stream: '>= 0.8' },
      added_p50_ms_c1_vs_bare_proxy: '<= 0.3',
    };
    process.stdout.write(
      `${JSON.stringify(
        {
          benchmark: 'gateway --workers',
          machine: { cpus: os.cpus().length, available: cpus, node: process.version },
          settings: {
            workers: workerCounts,
            modes,
            concurrency,
            load_processes: loadProcesses,
            mock_workers: mockWorkers,
            warmup_ms: warmupMs,
            duration_ms: durationMs,
            rate_per_s: ratePerS,
          },
          summary,
          direct: named(direct),
          bare_proxy: named(bare),
          evalgate_workers: perWorkers,
        },
        null,
        2,
      )}\n`,
    );
  } finally {
    for (const child of children.reverse()) await stopProcess(child);
    fs.rmSync(dataDir, { recursive: true, force: true });
  }
}

await main();
