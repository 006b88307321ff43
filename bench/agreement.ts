/**
 * Agreement benchmark: does a large agreement computation hold up the gateway? One command starts a
 * loopback mock upstream and Evalgate (the build; `--tsx` runs the sources), scores `--pairs` dataset rows
 * with an ordinal judge (each row carries the human grade as `expected`), then measures a gateway call's
 * latency at concurrency 1, idle and while `GET /v1/evaluators/{e}/agreement?run=…&resamples=N` is computed,
 * in alternating rounds. Prints one JSON document; the target is a p99 during the computation within 5 ms of
 * the idle p99.
 *
 *   npm run bench:agreement                        # 2,000 pairs, 10,000 resamples, 2 rounds (~2 min)
 *   npm run bench:agreement -- --pairs 1200 --resamples 5000 --rounds 3 --duration 5000
 *
 * Each loaded round asks with a new seed (a cached answer would cost nothing) and checks that the
 * computation was still running when the round's window closed.
 */
import { performance } from 'node:perf_hooks';
import { startMockUpstream } from '../test/fixtures/mock-upstream.js';
import { api, arg, type BenchServer, startServer } from './lib.js';
import { type LoadResult, runLoad } from './load.js';

const pairs = Number(arg('pairs', '2000'));
const resamples = Number(arg('resamples', '10000'));
const rounds = Number(arg('rounds', '2'));
const warmupMs = Number(arg('warmup', '1000'));
const durationMs = Number(arg('duration', '8000'));
const TARGET_MS = 5;

const judgeScore = (i: number) => (i % 5) + 1;
/** The human grade: the judge's at most positions, one or two off at others (κ about 0.6). */
const humanScore = (i: number) => (i % 4 === 0 ? ((judgeScore(i) + (i % 3)) % 5) + 1 : judgeScore(i));

// Judge prompts name their row (`a<i>`) and get a grade; gateway calls (to the same registered model, `judge`)
// get a short sentence.
const mock = await startMockUpstream({
  record: false,
  reply: (req) => {
    const messages = (req.body?.messages ?? []) as { content: unknown }[];
    const m = /\ba(\d+)\b/.exec(String(messages.at(-1)?.content ?? ''));
    return m ? { json: { score: judgeScore(Number(m[1])), reasoning: 'graded' } } : 'Hello from the mock.';
  },
});

const server = await startServer({
  OPENAI_API_KEY: 'sk-bench',
  OPENAI_BASE_URL: mock.baseUrl,
  EVALGATE_RATE_LIMIT_PER_MINUTE: '10000000',
  EVALGATE_RATE_LIMIT_BURST: '10000000',
});

async function setUp(s: BenchServer): Promise<string> {
  await api(s, 'POST', '/v1/models', {
    label: 'judge',
    provider: 'openai-compatible',
    base_url: mock.baseUrl,
    upstream_model: 'judge',
  });
  await api(s, 'POST', '/v1/containers', { label: 'bench' });
  const items = Array.from({ length: pairs }, (_, i) => ({
    input: `q${i}`,
    output: `a${i}`,
    expected: humanScore(i),
  }));
  await api(s, 'POST', '/v1/datasets', { label: 'graded', items });
  await api(s, 'POST', '/v1/evaluators', {
    type: 'judge',
    name: 'grade',
    model: 'judge',
    prompt: 'Grade the answer from 1 to 5.\n\nOutput: {{output}}',
    pass_threshold: 3,
    scale: { type: 'ordinal', min: 1, max: 5 },
  });
  const run = await api<{ id: string }>(s, 'POST', '/v1/evaluation/runs', {
    container: 'bench',
    evaluators: ['grade'],
    sample: { type: 'dataset', dataset: 'graded', range: `0:${pairs}` },
  });
  for (;;) {
    const got = await api<{ status: string }>(s, 'GET', `/v1/evaluation/runs/${run.id}`);
    if (got.status === 'completed') return run.id;
    if (got.status !== 'queued' && got.status !== 'running') throw new Error(`the run ended ${got.status}`);
    await new Promise((r) => setTimeout(r, 250));
  }
}

const gatewayCall = () =>
  runLoad({
    origin: server.url,
    path: '/v1/chat/completions',
    headers: { authorization: `Bearer ${server.key}`, 'content-type': 'application/json' },
    body: JSON.stringify({ model: 'judge', messages: [{ role: 'user', content: 'Say hello.' }] }),
    concurrency: 1,
    warmupMs,
    durationMs,
  });

interface Round {
  idle: LoadResult;
  during: LoadResult;
  agreement_ms: number;
  /** Whether the computation outlasted the measured window (else the window also measured idle time). */
  covered: boolean;
}

async function round(runId: string, seed: number): Promise<Round> {
  const idle = await gatewayCall();
  const t0 = performance.now();
  let endedAt = 0;
  const agreement = api<{ n: number; bootstrap: { resamples: number } }>(
    server,
    'GET',
    `/v1/evaluators/grade/agreement?run=${runId}&resamples=${resamples}&seed=${seed}`,
  ).then((a) => {
    endedAt = performance.now();
    return a;
  });
  const during = await gatewayCall();
  const windowEnd = performance.now();
  const answer = await agreement;
  if (idle.requests === 0 || during.requests === 0) throw new Error('no gateway call succeeded');
  if (answer.n !== pairs || answer.bootstrap.resamples !== resamples) {
    throw new Error(`agreement over ${answer.n} pairs, ${answer.bootstrap.resamples} resamples`);
  }
  return { idle, during, agreement_ms: Math.round(endedAt - t0), covered: endedAt > windowEnd };
}

try {
  const runId = await setUp(server);
  const results: Round[] = [];
  for (let r = 0; r < rounds; r++) results.push(await round(runId, 1000 + r));
  const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? Number.NaN;
  const r3 = (x: number) => Math.round(x * 1000) / 1000;
  const p99Delta = median(results.map((r) => r.during.p99_ms - r.idle.p99_ms));
  const pick = (l: LoadResult) => ({
    requests: l.requests,
    p50_ms: l.p50_ms,
    p99_ms: l.p99_ms,
    errors: l.errors,
  });
  process.stdout.write(
    `${JSON.stringify(
      {
        pairs,
        resamples,
        rounds: results.map((r) => ({
          idle: pick(r.idle),
          during_agreement: pick(r.during),
          agreement_ms: r.agreement_ms,
          computation_outlasted_window: r.covered,
        })),
        idle_p50_ms: r3(median(results.map((r) => r.idle.p50_ms))),
        idle_p99_ms: r3(median(results.map((r) => r.idle.p99_ms))),
        during_p50_ms: r3(median(results.map((r) => r.during.p50_ms))),
        during_p99_ms: r3(median(results.map((r) => r.during.p99_ms))),
        p99_added_ms: r3(p99Delta),
        target_ms: TARGET_MS,
        met: p99Delta <= TARGET_MS && results.every((r) => r.covered),
      },
      null,
      2,
    )}\n`,
  );
} finally {
  await server.stop();
  await mock.close();
}
process.exit(0);
