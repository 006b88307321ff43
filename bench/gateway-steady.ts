/**
 * The gateway's per-core cost, measured so that it holds on a machine other work shares (bench/method.ts):
 *
 * 1. CPU per call at a fixed request rate (open loop, `--rate`, default 1,000 calls/s): Evalgate with
 *    recording on and a bare node proxy to the same mock alternate in `--rounds` rounds (default 5), plain
 *    and streamed; and a response-cache hit against an upstream call of the same gateway. Each figure is
 *    the median of the per-round ratios with its range, refused when the rounds spread by more than
 *    `--max-spread` (default 0.25, i.e. (max − min) ÷ median).
 * 2. Added latency at concurrency 1, p50 and p99, plain and streamed (and a cache hit), against the mock
 *    answering directly, in the same alternating rounds: the per-round differences' median and range.
 * 3. Sustained requests per second with recording, rate limits and a project budget on, against a mock
 *    answering in 20 ms (`--sustained-concurrency`, default 256), Evalgate and the bare proxy alternating.
 *
 *   npm run bench:gateway                                   # all three (~8 min)
 *   npm run bench:gateway -- --only cpu --rounds 7 --rate 1000 --duration 4000
 *   npm run bench:gateway -- --only latency,sustained --max-spread 0.2
 *
 * The server runs from the build (tsc first; `--tsx` runs the sources). Prints one JSON document; the
 * progress of every round goes to stderr.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import {
  api,
  arg,
  type BenchServer,
  jsonUrl,
  startMockProcess,
  startProcess,
  startServer,
  stopProcess,
  threadCpuUs,
  threadSplit,
} from './lib.js';
import { runLoad } from './load.js';
import {
  alternate,
  cpuPerCall,
  differenceFigure,
  loadAverage,
  median,
  perRound,
  perRoundDiff,
  ratioFigure,
} from './method.js';

const rounds = Math.max(1, Number(arg('rounds', '5')));
const rate = Number(arg('rate', '1000'));
const warmupMs = Number(arg('warmup', '1000'));
const durationMs = Number(arg('duration', '3000'));
const maxSpread = Number(arg('max-spread', '0.25'));
const sustainedConcurrency = Number(arg('sustained-concurrency', '256'));
const only = new Set(arg('only', 'cpu,latency,sustained').split(','));

const NODE_TSX = ['--import', 'tsx'];
const LIMITS = { EVALGATE_RATE_LIMIT_PER_MINUTE: '10000000', EVALGATE_RATE_LIMIT_BURST: '10000000' };

interface Endpoint {
  origin: string;
  headers: Record<string, string>;
  model: string;
}

function bodyOf(model: string, stream: boolean): string {
  return JSON.stringify({
    model,
    messages: [{ role: 'user', content: 'Say hello.' }],
    ...(stream ? { stream: true } : {}),
  });
}

function loadOf(to: Endpoint, stream: boolean, extra: Record<string, string> = {}) {
  return {
    origin: to.origin,
    path: '/v1/chat/completions',
    headers: { 'content-type': 'application/json', ...to.headers, ...extra },
    body: bodyOf(to.model, stream),
  };
}

/** A server of the bench and its mock and bare proxy, stopped together. */
async function gatewayOver(mockUrl: string, env: Record<string, string>): Promise<BenchServer> {
  return startServer({ ...LIMITS, OPENAI_API_KEY: 'sk-bench', OPENAI_BASE_URL: `${mockUrl}/v1`, ...env });
}

const CACHE = { 'x-evalgate-cache': 'use' };

const endpointOf = (server: BenchServer): Endpoint => ({
  origin: server.url,
  headers: { authorization: `Bearer ${server.key}` },
  model: 'openai/gpt-4o-mini',
});

/** The same gateway with recording off, and with recording on but no spool (what a kill may lose). */
interface Variants {
  unrecorded: BenchServer;
  unspooled: BenchServer;
}

async function cpuFigures(evalgate: BenchServer, variants: Variants, proxy: { url: string; pid: number }) {
  const { unrecorded, unspooled } = variants;
  const eg = endpointOf(evalgate);
  const bare: Endpoint = { origin: proxy.url, headers: {}, model: 'gpt-4o-mini' };
  const egPid = evalgate.child.pid!;
  const at =
    (pid: number, to: Endpoint, stream: boolean, extra: Record<string, string> = {}) =>
    async () => {
      const before = threadCpuUs(pid);
      const r = await cpuPerCall([pid], async () => {
        const load = await runLoad({
          ...loadOf(to, stream, extra),
          concurrency: 64,
          warmupMs,
          durationMs,
          ratePerS: rate,
        });
        return { calls: load.completed, rps: load.rps, errors: load.errors, p99_ms: load.p99_ms };
      });
      // Where the CPU went: the main thread, the busiest other (the log writer's), the rest (GC helpers, libuv).
      const split = threadSplit(pid, before, threadCpuUs(pid));
      const per = (us: number) => (r.calls > 0 ? Math.round(us / r.calls) : Number.NaN);
      return {
        ...r,
        threads_us_per_call: {
          main: per(split.main),
          writer: per(split.busiest_other),
          rest: per(split.rest),
        },
      };
    };
  const results = await alternate(rounds, [
    { name: 'bare_plain', run: at(proxy.pid, bare, false) },
    { name: 'evalgate_plain', run: at(egPid, eg, false) },
    { name: 'evalgate_unrecorded_plain', run: at(unrecorded.child.pid!, endpointOf(unrecorded), false) },
    { name: 'evalgate_unspooled_plain', run: at(unspooled.child.pid!, endpointOf(unspooled), false) },
    { name: 'bare_stream', run: at(proxy.pid, bare, true) },
    { name: 'evalgate_stream', run: at(egPid, eg, true) },
    { name: 'evalgate_cache_hit', run: at(egPid, eg, false, CACHE) },
  ]);
  const cpu = (r: { cpu_us_per_call: number }) => r.cpu_us_per_call;
  const perCall = (name: string) => {
    const rs = results.get(name) ?? [];
    return {
      cpu_us_per_call_median: median(rs.map(cpu)),
      threads_us_per_call_median: {
        main: median(rs.map((r) => r.threads_us_per_call.main)),
        writer: median(rs.map((r) => r.threads_us_per_call.writer)),
        rest: median(rs.map((r) => r.threads_us_per_call.rest)),
      },
      achieved_rps_median: median(rs.map((r) => r.rps)),
      errors: rs.reduce((a, r) => a + r.errors, 0),
      rounds: rs,
    };
  };
  /** A step's CPU per call over another's, round by round, as a figure. */
  const ratio = (a: string, b: string, target?: number) =>
    ratioFigure(perRound(results, a, b, cpu), maxSpread, target);
  return {
    rate_per_s: rate,
    recorded_vs_bare_proxy: {
      plain: ratio('evalgate_plain', 'bare_plain', 1.35),
      stream: ratio('evalgate_stream', 'bare_stream', 1.6),
    },
    // What limits the plain figure: the gateway without recording (auth, limits, routing, the provider
    // layer) against the bare proxy; what recording adds (the task log, its span and trace, its session,
    // stored by the writer's thread); and what the spool adds (each record written to a file before
    // the answer goes out, so that a kill loses nothing).
    decomposition: {
      unrecorded_vs_bare_proxy: ratio('evalgate_unrecorded_plain', 'bare_plain'),
      unspooled_vs_unrecorded: ratio('evalgate_unspooled_plain', 'evalgate_unrecorded_plain'),
      recorded_vs_unspooled: ratio('evalgate_plain', 'evalgate_unspooled_plain'),
    },
    cache_hit_vs_upstream_call: ratio('evalgate_cache_hit', 'evalgate_plain', 0.35),
    per_target: Object.fromEntries([...results.keys()].map((name) => [name, perCall(name)])),
  };
}

async function latencyFigures(mockUrl: string, evalgate: BenchServer, proxyUrl: string) {
  const eg: Endpoint = {
    origin: evalgate.url,
    headers: { authorization: `Bearer ${evalgate.key}` },
    model: 'openai/gpt-4o-mini',
  };
  const direct: Endpoint = { origin: mockUrl, headers: {}, model: 'gpt-4o-mini' };
  const bare: Endpoint = { origin: proxyUrl, headers: {}, model: 'gpt-4o-mini' };
  const at =
    (to: Endpoint, stream: boolean, extra: Record<string, string> = {}) =>
    async () => {
      const r = await runLoad({ ...loadOf(to, stream, extra), concurrency: 1, warmupMs, durationMs });
      return { p50_ms: r.p50_ms, p99_ms: r.p99_ms, requests: r.requests, errors: r.errors };
    };
  const results = await alternate(rounds, [
    { name: 'direct_plain', run: at(direct, false) },
    { name: 'evalgate_plain', run: at(eg, false) },
    { name: 'bare_plain', run: at(bare, false) },
    { name: 'direct_stream', run: at(direct, true) },
    { name: 'evalgate_stream', run: at(eg, true) },
    { name: 'evalgate_cache_hit', run: at(eg, false, CACHE) },
  ]);
  const p50 = (r: { p50_ms: number }) => r.p50_ms;
  const p99 = (r: { p99_ms: number }) => r.p99_ms;
  return {
    concurrency: 1,
    added_ms_vs_direct: {
      plain: {
        p50: differenceFigure(perRoundDiff(results, 'evalgate_plain', 'direct_plain', p50)),
        p99: differenceFigure(perRoundDiff(results, 'evalgate_plain', 'direct_plain', p99), 0.25),
      },
      stream: {
        p50: differenceFigure(perRoundDiff(results, 'evalgate_stream', 'direct_stream', p50)),
        p99: differenceFigure(perRoundDiff(results, 'evalgate_stream', 'direct_stream', p99)),
      },
      cache_hit: {
        p50: differenceFigure(perRoundDiff(results, 'evalgate_cache_hit', 'direct_plain', p50), 0.1),
        p99: differenceFigure(perRoundDiff(results, 'evalgate_cache_hit', 'direct_plain', p99)),
      },
    },
    bare_proxy_added_ms_vs_direct: {
      p50: differenceFigure(perRoundDiff(results, 'bare_plain', 'direct_plain', p50)),
      p99: differenceFigure(perRoundDiff(results, 'bare_plain', 'direct_plain', p99)),
    },
    per_target: Object.fromEntries(results),
  };
}

async function sustainedFigures() {
  const mock = await startMockProcess({ MOCK_LATENCY_MS: '20' });
  const proxy = await startProcess([...NODE_TSX, 'bench/bare-proxy.ts', mock.url], {}, jsonUrl);
  const server = await gatewayOver(mock.url, {
    // Limits on (high enough not to refuse the bench's calls), every call checked and counted.
    EVALGATE_UPSTREAM_CONNECTIONS: String(sustainedConcurrency),
  });
  try {
    await api(server, 'PUT', '/v1/projects/current/budget', { limit_usd: 1_000_000, period: 'month' });
    const at = (to: Endpoint) => async () => {
      const r = await runLoad({
        ...loadOf(to, false),
        concurrency: sustainedConcurrency,
        warmupMs,
        durationMs,
      });
      return { rps: r.rps, p50_ms: r.p50_ms, p99_ms: r.p99_ms, errors: r.errors };
    };
    const results = await alternate(rounds, [
      {
        name: 'evalgate',
        run: at({
          origin: server.url,
          headers: { authorization: `Bearer ${server.key}` },
          model: 'openai/gpt-4o-mini',
        }),
      },
      { name: 'bare_proxy', run: at({ origin: proxy.url, headers: {}, model: 'gpt-4o-mini' }) },
    ]);
    const rps = (r: { rps: number }) => r.rps;
    const es = results.get('evalgate') ?? [];
    return {
      upstream_latency_ms: 20,
      concurrency: sustainedConcurrency,
      settings: 'recording on, rate limits on, a project budget on',
      evalgate_rps: {
        median: median(es.map(rps)),
        range: [Math.min(...es.map(rps)), Math.max(...es.map(rps))],
      },
      evalgate_vs_bare_proxy: ratioFigure(perRound(results, 'evalgate', 'bare_proxy', rps), maxSpread),
      per_target: Object.fromEntries(results),
    };
  } finally {
    await server.stop();
    await stopProcess(proxy.child);
    await mock.stop();
  }
}

async function main(): Promise<void> {
  const loadBefore = loadAverage();
  const summary: Record<string, unknown> = {};
  if (only.has('cpu') || only.has('latency')) {
    const mock = await startMockProcess({});
    const proxy = await startProcess([...NODE_TSX, 'bench/bare-proxy.ts', mock.url], {}, jsonUrl);
    const server = await gatewayOver(mock.url, {});
    try {
      if (only.has('cpu')) {
        // The same gateway with recording off, and recording without the spool: where the plain figure
        // goes. Stopped before the latency figures, so that their timers do not run beside them.
        const variants: Variants = {
          unrecorded: await gatewayOver(mock.url, { EVALGATE_RECORDING: '0' }),
          unspooled: await gatewayOver(mock.url, { EVALGATE_LOG_SPOOL: '0' }),
        };
        try {
          summary.cpu_per_call = await cpuFigures(server, variants, {
            url: proxy.url,
            pid: proxy.child.pid!,
          });
        } finally {
          await variants.unrecorded.stop();
          await variants.unspooled.stop();
        }
      }
      if (only.has('latency')) summary.added_latency_c1 = await latencyFigures(mock.url, server, proxy.url);
    } finally {
      await server.stop();
      await stopProcess(proxy.child);
      await mock.stop();
    }
  }
  if (only.has('sustained')) summary.sustained = await sustainedFigures();
  const report = {
    benchmark: 'gateway',
    method: 'alternating rounds, open loop for CPU (bench/method.ts)',
    machine: { cpus: os.cpus().length, model: os.cpus()[0]?.model ?? '', node: process.version },
    load_average: { before: loadBefore, after: loadAverage() },
    settings: {
      rounds,
      rate_per_s: rate,
      warmup_ms: warmupMs,
      duration_ms: durationMs,
      max_spread: maxSpread,
    },
    ...summary,
  };
  process.stdout.write(`${JSON.stringify(report, null, 2)}\n`);
  const out = arg('out', '');
  if (out) {
    fs.mkdirSync(path.dirname(path.resolve(out)), { recursive: true });
    fs.writeFileSync(out, `${JSON.stringify(report, null, 2)}\n`);
  }
}

await main();
