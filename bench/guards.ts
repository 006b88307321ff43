/**
 * Guards benchmark: what the gateway's guards add to a call. Prints one JSON document.
 *
 *   npm run bench:guards                           # 5 rounds (~1-2 min)
 *   npm run bench:guards -- --rounds 7 --calls 20000 --http-calls 2000
 *
 * Two parts, each in alternating rounds (the variants' order rotates per round, so the machine's load
 * falls on each alike); every figure is the median over rounds of (variant − baseline), with its range:
 *
 * - `step`: the guard step alone, in this process, on a 1 KB message (input checks on the request, output
 *   checks on a 1 KB answer): CPU per call for `pattern` (a regex and a deny list) and `pii` (the
 *   personal-data guard), against `none` (no policy applies: the step is skipped). Target ≤ 50 µs.
 * - `http`: end to end through `evalgate serve` and the mock upstream (each in its own process): added
 *   server CPU per call and added p50/p99 latency at concurrency 1 and 64, the same three variants (one
 *   server: the variants are models a policy applies to, or not). Target ≤ 0.1 ms at p50.
 * - `parallel`: a parallel-stage judge beside the main call, each answered by a mock upstream with a set
 *   delay (judge 30 ms and main 50 ms, and the reverse): each call's latency p50/p99 less the slower
 *   delay, and less an unguarded call to the 50 ms upstream (what the slower call costs on its own).
 *   Target: no more than the slower call plus 1 ms.
 *
 * `--http no` or `--parallel no` skips a part; `--parallel-calls` sets the calls per round at
 * concurrency 1 (ten times as many at concurrency 64).
 */
import { performance } from 'node:perf_hooks';
import { Pool } from 'undici';
import { guardStepOf } from '../src/gateway/guard-step.js';
import { compileGuard, withDefaults } from '../src/guards/compile.js';
import type { CallChecks, GuardRuntime } from '../src/guards/runtime.js';
import type { GuardCheckInput } from '../src/guards/schemas.js';
import { api, arg, type BenchServer, prose, startMockProcess, startServer } from './lib.js';
import { alternate, differenceFigure, loadAverage, median, processCpuUs, settle } from './method.js';

const rounds = Number(arg('rounds', '5'));
const stepCalls = Number(arg('calls', '10000'));
const httpCalls = Number(arg('http-calls', '1000'));
const parallelCalls = Number(arg('parallel-calls', '100'));
const message = prose(1000);
const answer = prose(1000);

const VARIANTS: Record<string, GuardCheckInput[]> = {
  none: [],
  pattern: [
    { name: 'order-ids', guard: { type: 'regex', pattern: 'ORD-[0-9]{6,}' }, action: 'block' },
    {
      name: 'words',
      guard: { type: 'deny_list', terms: ['confidential', 'internal only'] },
      stage: 'output',
    },
  ],
  pii: [
    { name: 'pii-in', guard: { type: 'pii' }, action: 'redact' },
    { name: 'pii-out', guard: { type: 'pii' }, stage: 'output', action: 'redact' },
  ],
};

/** A runtime holding one variant's compiled checks (no database: the step's own work is measured). */
function runtimeOf(checks: GuardCheckInput[]): GuardRuntime {
  const out: CallChecks = { input: [], parallel: [], output: [] };
  for (const c of checks.map(withDefaults)) {
    if (c.guard.type === 'evaluator') continue;
    out[c.stage].push({ policyId: 'grd_bench', check: c, guard: compileGuard(c.guard), evaluator: null });
  }
  const empty = checks.length === 0;
  return {
    ports: {} as GuardRuntime['ports'],
    checksFor: async () => (empty ? null : out),
    changed: () => {},
    record: () => {},
  };
}

async function stepRound(runtime: GuardRuntime): Promise<{ calls: number; cpu_us_per_call: number }> {
  const body = JSON.stringify({ choices: [{ index: 0, message: { role: 'assistant', content: answer } }] });
  const before = process.cpuUsage();
  for (let i = 0; i < stepCalls; i++) {
    const request = { model: 'm', messages: [{ role: 'user' as const, content: message }] };
    const step = await guardStepOf(runtime, {
      projectId: 'prj',
      keyId: 'key',
      containerId: null,
      logId: null,
      request,
      base: {},
    });
    if (step) {
      await step.before(() => {});
      await step.plain(body, answer);
      step.finish();
    }
  }
  const used = process.cpuUsage(before);
  return {
    calls: stepCalls,
    cpu_us_per_call: Math.round(((used.user + used.system) / stepCalls) * 100) / 100,
  };
}

async function stepPart() {
  const runtimes = Object.fromEntries(Object.entries(VARIANTS).map(([k, v]) => [k, runtimeOf(v)]));
  await stepRound(runtimes.pii!); // warm-up
  const results = await alternate(
    rounds,
    Object.keys(VARIANTS).map((name) => ({ name, run: () => stepRound(runtimes[name]!) })),
  );
  const added = (name: string) =>
    differenceFigure(
      results.get(name)!.map((r, i) => r.cpu_us_per_call - results.get('none')![i]!.cpu_us_per_call),
      50,
    );
  return {
    calls_per_round: stepCalls,
    baseline_cpu_us_per_call: median(results.get('none')!.map((r) => r.cpu_us_per_call)),
    added_cpu_us_per_call: { pattern: added('pattern'), pii: added('pii') },
  };
}

/** The key's rate limit out of the way: past its burst, 429s answered at once would pass for fast calls. */
const LIMITS = { EVALGATE_RATE_LIMIT_PER_MINUTE: '10000000', EVALGATE_RATE_LIMIT_BURST: '10000000' };

const quantile = (xs: number[], q: number) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor(q * s.length))] ?? Number.NaN;
};

async function load(
  origin: string,
  key: string,
  model: string,
  concurrency: number,
  pid: number,
  calls: number = httpCalls,
) {
  const pool = new Pool(origin, { connections: concurrency, pipelining: 1 });
  const body = JSON.stringify({ model, messages: [{ role: 'user', content: message }] });
  const headers = { authorization: `Bearer ${key}`, 'content-type': 'application/json' };
  const latencies: number[] = [];
  let next = 0;
  let errors = 0;
  const before = processCpuUs(pid) ?? 0;
  async function caller() {
    while (next < calls) {
      next++;
      const t0 = performance.now();
      const res = await pool.request({ method: 'POST', path: '/v1/chat/completions', headers, body });
      for await (const _ of res.body) {
        // Read to the end.
      }
      if (res.statusCode !== 200) errors++;
      latencies.push(performance.now() - t0);
    }
  }
  await Promise.all(Array.from({ length: concurrency }, () => caller()));
  await pool.close();
  await settle([pid]);
  const used = (processCpuUs(pid) ?? 0) - before;
  const r3 = (x: number) => Math.round(x * 1000) / 1000;
  return {
    errors,
    cpu_us_per_call: Math.round(used / latencies.length),
    p50_ms: r3(quantile(latencies, 0.5)),
    p99_ms: r3(quantile(latencies, 0.99)),
  };
}

async function httpPart() {
  const mock = await startMockProcess({ MOCK_REPLY_CHARS: '1000' });
  const server = await startServer(LIMITS);
  try {
    for (const name of Object.keys(VARIANTS)) {
      await api(server, 'POST', '/v1/models', {
        label: `m-${name}`,
        base_url: mock.baseUrl,
        upstream_model: name,
      });
      if (VARIANTS[name]!.length)
        await api(server, 'POST', '/v1/guards', {
          name,
          applies_to: { models: [`m-${name}`] },
          checks: VARIANTS[name],
        });
    }
    const pid = server.child.pid!;
    const out: Record<string, unknown> = {};
    for (const concurrency of [1, 64]) {
      await load(server.url, server.key, 'm-none', concurrency, pid); // warm-up
      const results = await alternate(
        rounds,
        Object.keys(VARIANTS).map((name) => ({
          name,
          run: () => load(server.url, server.key, `m-${name}`, concurrency, pid),
        })),
      );
      const diff = (name: string, pick: (r: Awaited<ReturnType<typeof load>>) => number, atMost?: number) =>
        differenceFigure(
          results.get(name)!.map((r, i) => pick(r) - pick(results.get('none')![i]!)),
          atMost,
        );
      out[`concurrency_${concurrency}`] = {
        baseline: {
          cpu_us_per_call: median(results.get('none')!.map((r) => r.cpu_us_per_call)),
          p50_ms: median(results.get('none')!.map((r) => r.p50_ms)),
          p99_ms: median(results.get('none')!.map((r) => r.p99_ms)),
        },
        errors: Object.fromEntries([...results].map(([k, v]) => [k, v.reduce((n, r) => n + r.errors, 0)])),
        ...Object.fromEntries(
          ['pattern', 'pii'].map((name) => [
            name,
            {
              added_cpu_us_per_call: diff(name, (r) => r.cpu_us_per_call, 50),
              added_p50_ms: diff(name, (r) => r.p50_ms, concurrency === 1 ? 0.1 : undefined),
              added_p99_ms: diff(name, (r) => r.p99_ms),
            },
          ]),
        ),
      };
    }
    return { calls_per_round: httpCalls, ...out };
  } finally {
    await server.stop();
    await mock.stop();
  }
}

/** The delays of the parallel part's upstreams (ms): the judge's and the main call's, each way round. */
const JUDGE_FAST = { judge: 30, main: 50 };
const JUDGE_SLOW = { judge: 50, main: 30 };
const PARALLEL_VARIANTS = { unguarded_50: null, judge30_main50: JUDGE_FAST, judge50_main30: JUDGE_SLOW };

/** The parallel part's server: one mock upstream per delay, a judge evaluator on each, a policy per pair. */
async function parallelSetUp(server: BenchServer, mocks: Record<number, string>): Promise<void> {
  for (const [ms, baseUrl] of Object.entries(mocks)) {
    for (const role of ['judge', 'main'])
      await api(server, 'POST', '/v1/models', {
        label: `${role}-${ms}`,
        base_url: baseUrl,
        upstream_model: role,
      });
    await api(server, 'POST', '/v1/evaluators', {
      type: 'judge',
      name: `judge-${ms}`,
      model: `judge-${ms}`,
      prompt: 'Is this request acceptable? {{output}}',
      pass_threshold: 0.5,
    });
  }
  for (const [name, delays] of Object.entries(PARALLEL_VARIANTS)) {
    if (!delays) continue;
    await api(server, 'POST', '/v1/models', {
      label: name,
      base_url: mocks[delays.main],
      upstream_model: 'main',
    });
    await api(server, 'POST', '/v1/guards', {
      name,
      applies_to: { models: [name] },
      checks: [
        {
          name: 'judge',
          guard: { type: 'evaluator', evaluator: `judge-${delays.judge}` },
          stage: 'parallel',
        },
      ],
    });
  }
}

async function parallelPart() {
  // Every answer is a passing verdict: the judge reads it, the main call's client only waits for it.
  const verdict = JSON.stringify({ score: 1, reasoning: 'ok' });
  const mocks = await Promise.all(
    [30, 50].map((ms) => startMockProcess({ MOCK_LATENCY_MS: String(ms), MOCK_REPLY_JSON: verdict })),
  );
  const server = await startServer(LIMITS);
  try {
    await parallelSetUp(server, { 30: mocks[0]!.baseUrl, 50: mocks[1]!.baseUrl });
    const pid = server.child.pid!;
    const model = (name: string) => (name === 'unguarded_50' ? 'main-50' : name);
    const out: Record<string, unknown> = {};
    for (const concurrency of [1, 64]) {
      // At 64 callers, ten times the calls: enough waves of 64 for a p99.
      const calls = concurrency === 1 ? parallelCalls : parallelCalls * 10;
      for (const name of Object.keys(PARALLEL_VARIANTS))
        await load(server.url, server.key, model(name), concurrency, pid, Math.min(calls, 200)); // warm-up
      const results = await alternate(
        rounds,
        Object.keys(PARALLEL_VARIANTS).map((name) => ({
          name,
          run: () => load(server.url, server.key, model(name), concurrency, pid, calls),
        })),
      );
      const figures = (name: string, slower: number) => {
        const rs = results.get(name)!;
        const base = results.get('unguarded_50')!;
        return {
          errors: rs.reduce((n, r) => n + r.errors, 0),
          p50_over_slower_ms: differenceFigure(
            rs.map((r) => r.p50_ms - slower),
            1,
          ),
          p99_over_slower_ms: differenceFigure(rs.map((r) => r.p99_ms - slower)),
          p50_over_unguarded_ms: differenceFigure(
            rs.map((r, i) => r.p50_ms - base[i]!.p50_ms),
            1,
          ),
          p99_over_unguarded_ms: differenceFigure(rs.map((r, i) => r.p99_ms - base[i]!.p99_ms)),
        };
      };
      out[`concurrency_${concurrency}`] = {
        calls_per_round: calls,
        unguarded_50: figures('unguarded_50', 50),
        judge30_main50: figures('judge30_main50', 50),
        judge50_main30: figures('judge50_main30', 50),
      };
    }
    return { delays_ms: { judge30_main50: JUDGE_FAST, judge50_main30: JUDGE_SLOW }, ...out };
  } finally {
    await server.stop();
    await Promise.all(mocks.map((m) => m.stop()));
  }
}

const step = await stepPart();
const http = arg('http', 'yes') === 'no' ? null : await httpPart();
const parallel = arg('parallel', 'yes') === 'no' ? null : await parallelPart();
process.stdout.write(
  `${JSON.stringify({ bench: 'guards', rounds, message_chars: message.length, load: loadAverage(), step, http, parallel }, null, 2)}\n`,
);
