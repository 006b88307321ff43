/**
 * Evaluation run benchmark, in alternating rounds (bench/method.ts): each of `--rounds` rounds (default 5)
 * runs the bare client (the judge request straight to the mock, `--bare-duration` ms), a judge run over N
 * positions and a judge run over `--small-positions` (default 3,000; 0: none), in an order rotating from
 * round to round. Figures: the server's CPU per judge sample (utime + stime of the server process until
 * it is idle again, over the scored samples) over the bare client's CPU per call, per round, as the
 * median with its range (refused when the rounds spread by more than `--max-spread`, default 0.25); the
 * short run's CPU per sample over the long run's (the per-run fixed costs); the load average.
 *
 * Each run: a judge run over N positions (default 100,000) against the mock upstream with
 * a fixed latency (default 50 ms) and a per-model concurrency (default 32). The best any executor can do
 * is concurrency ÷ latency samples per second (640/s by default: a rate a loaded 2-core machine holds);
 * the bare client sends at that same rate (open loop, the same concurrency), so that both sides do the
 * same work per second and their CPU per call compares whatever else the machine is doing. The benchmark
 * reports how close Evalgate gets to the bound, and the bare client's rate beside. Also: peak RSS, CPU
 * per sample, and the time from the 201 to the first result. Before the rounds, a warm-up (the bare
 * client for a second, a judge run of 1,000 positions) brings both processes' code to its optimised
 * state; it is not counted.
 *
 *   npm run bench:runs
 *   npm run bench:runs -- --positions 20000 --latency-ms 20 --concurrency 128   # 6,400/s: the server's ceiling
 *   npm run bench:runs -- --positions 30000 --rounds 5 --small-positions 3000
 *   npm run bench:runs -- --cpu-prof        # writes the server's CPU profile under bench/out/
 */
import {
  api,
  arg,
  type BenchServer,
  judgeRequestBody,
  meanCallLatencyMs,
  rssMb,
  setUpJudgeRun,
  startMockProcess,
  startServer,
} from './lib.js';
import { runLoad } from './load.js';
import { alternate, cpuPerCall, loadAverage, median, ratioFigure } from './method.js';

const positions = Number(arg('positions', '100000'));
const latencyMs = Number(arg('latency-ms', '50'));
const concurrency = Number(arg('concurrency', '32'));
const chunkSize = arg('chunk-size', '');
const rounds = Math.max(1, Number(arg('rounds', '5')));
const smallPositions = Number(arg('small-positions', '3000'));
const bareMs = Number(arg('bare-duration', '5000'));
const maxSpread = Number(arg('max-spread', '0.25'));

/** One judge run of `n` positions: server CPU per scored sample (until the server is idle again) and more. */
async function judgeRun(server: BenchServer, judgeId: string, n: number) {
  const src = { type: 'dataset', dataset: 'bench', range: `0:${n}` };
  const pid = server.child.pid!;
  let firstResultMs: number | null = null;
  let done: Record<string, any> = {};
  let runId = '';
  let seconds = 0;
  const measured = await cpuPerCall([pid], async () => {
    const t0 = performance.now();
    const run = await api(server, 'POST', '/v1/evaluation/runs', {
      container: 'bench',
      evaluators: [judgeId],
      sample: src,
      ground_truth: src,
    });
    runId = run.id;
    let status = run.status as string;
    while (!['completed', 'error', 'cancelled'].includes(status)) {
      await new Promise((r) => setTimeout(r, firstResultMs === null ? 10 : 100));
      if (firstResultMs === null) {
        const samples = await api(server, 'GET', `/v1/evaluation/runs/${run.id}/samples?limit=1`);
        if (samples.total > 0) firstResultMs = performance.now() - t0;
      }
      status = (await api(server, 'GET', `/v1/evaluation/runs/${run.id}`)).status;
    }
    seconds = (performance.now() - t0) / 1000;
    done = await api(server, 'GET', `/v1/evaluation/runs/${run.id}`);
    const perEval = done.results.per_model[0].per_eval[judgeId];
    return { calls: perEval.num_scored as number, errors: perEval.num_errors as number, status };
  });
  return {
    positions: n,
    run_id: runId,
    status: measured.status,
    scored: measured.calls,
    errors: measured.errors,
    seconds: Math.round(seconds * 100) / 100,
    samples_per_s: Math.round(measured.calls / seconds),
    first_result_ms: firstResultMs === null ? null : Math.round(firstResultMs),
    server_us_per_sample: measured.cpu_us_per_call,
    spend_usd: done.spend,
  };
}

/**
 * The bare client: the same judge request sent straight to the mock by an undici client in this process
 * at the same concurrency; its CPU per call (this process does nothing else meanwhile) is the floor of
 * what sending a judge call and reading its answer costs.
 */
async function bareClient(mockUrl: string, durationMs = bareMs) {
  const cpu0 = process.cpuUsage();
  const direct = await runLoad({
    origin: mockUrl,
    path: '/v1/chat/completions',
    headers: { 'content-type': 'application/json' },
    // This bench's shorter system prompt (bench/scale.ts sends the judge's own).
    body: judgeRequestBody('You are an impartial evaluator. Reply with a JSON object {"score": n}.'),
    concurrency,
    warmupMs: 1000,
    durationMs,
    // The rate the run's executor is bounded to (its concurrency over the mock's latency).
    ratePerS: concurrency / (latencyMs / 1000),
  });
  const cpu = process.cpuUsage(cpu0);
  return {
    rps: Math.round(direct.rps),
    calls: direct.completed,
    errors: direct.errors,
    client_us_per_call: Math.round((cpu.user + cpu.system) / direct.completed),
  };
}

async function main(): Promise<void> {
  const loadBefore = loadAverage();
  const mock = await startMockProcess({
    MOCK_LATENCY_MS: String(latencyMs),
    MOCK_REPLY_JSON: JSON.stringify({ score: 1, reasoning: 'ok' }),
  });
  const profile = process.argv.includes('--cpu-prof') ? ['--cpu-prof', '--cpu-prof-dir=bench/out'] : [];
  const semi = arg('semi-space-mb', '');
  if (semi) profile.push(`--max-semi-space-size=${semi}`);
  const server = await startServer(
    {
      EVALGATE_MODEL_CONCURRENCY: String(concurrency),
      EVALGATE_UPSTREAM_CONNECTIONS: String(concurrency),
      ...(chunkSize ? { EVALGATE_RUN_CHUNK_SIZE: chunkSize } : {}),
    },
    profile,
  );
  try {
    const judgeId = await setUpJudgeRun(server, mock.baseUrl, positions);
    const baseRss = rssMb(server.child.pid!).now;
    // Warm-up, not counted: both processes' hot code optimised before the first round.
    await bareClient(mock.url, 1000);
    await judgeRun(server, judgeId, Math.min(1000, positions));
    type Row = Awaited<ReturnType<typeof judgeRun>> | Awaited<ReturnType<typeof bareClient>>;
    const steps: { name: string; run: () => Promise<Row> }[] = [
      { name: 'bare_client', run: () => bareClient(mock.url) },
      { name: 'run', run: () => judgeRun(server, judgeId, positions) },
    ];
    if (smallPositions > 0 && smallPositions < positions)
      steps.push({ name: 'small_run', run: () => judgeRun(server, judgeId, smallPositions) });
    const results = await alternate<Row>(rounds, steps);
    const runs = (results.get('run') ?? []) as Awaited<ReturnType<typeof judgeRun>>[];
    const bare = (results.get('bare_client') ?? []) as Awaited<ReturnType<typeof bareClient>>[];
    const small = (results.get('small_run') ?? []) as Awaited<ReturnType<typeof judgeRun>>[];
    const perSample = (r: Row) => ('server_us_per_sample' in r ? r.server_us_per_sample : Number.NaN);
    const perCall = (r: Row) => ('client_us_per_call' in r ? r.client_us_per_call : Number.NaN);
    const last = runs.at(-1)!;
    // The judge call latency as the executor saw it, over a spread of the last run's positions.
    const callLatencyMs = await meanCallLatencyMs(server, last.run_id, positions);
    const bound = concurrency / (latencyMs / 1000);
    const samplesPerS = median(runs.map((r) => r.samples_per_s));
    const directPerS = median(bare.map((r) => r.rps));
    process.stdout.write(
      `${JSON.stringify(
        {
          benchmark: 'runs',
          method: 'alternating rounds (bench/method.ts)',
          load_average: { before: loadBefore, after: loadAverage() },
          positions,
          rounds,
          // Every run's every sample ends scored or errored; a run that did not complete says so here.
          all_completed:
            runs.every((r) => r.status === 'completed') && small.every((r) => r.status === 'completed'),
          // Server CPU per judge sample over the bare client's CPU per call, per round.
          server_per_sample_to_bare_call: ratioFigure(
            runs.map((r, i) => perSample(r) / perCall(bare[i]!)),
            maxSpread,
            1.5,
          ),
          ...(small.length
            ? {
                // A short run's CPU per sample over the long run's (the per-run fixed costs).
                small_run_to_run_per_sample: {
                  small_positions: smallPositions,
                  ...ratioFigure(
                    small.map((r, i) => perSample(r) / perSample(runs[i]!)),
                    maxSpread,
                    1.2,
                  ),
                },
              }
            : {}),
          server_us_per_sample_median: median(runs.map(perSample)),
          bare_client_us_per_call_median: median(bare.map(perCall)),
          samples_per_s_median: samplesPerS,
          bound_per_s: bound,
          ratio: Math.round((samplesPerS / bound) * 1000) / 1000,
          direct_per_s: directPerS,
          ratio_to_direct: Math.round((samplesPerS / directPerS) * 1000) / 1000,
          avg_call_latency_ms: Math.round(callLatencyMs * 10) / 10,
          first_result_ms_median: median(runs.map((r) => r.first_result_ms ?? Number.NaN)),
          server_peak_rss_mb: rssMb(server.child.pid!).peak,
          server_rss_before_runs_mb: baseRss,
          settings: {
            latency_ms: latencyMs,
            concurrency,
            chunk_size: chunkSize || 'default',
            max_spread: maxSpread,
          },
          per_round: Object.fromEntries(results),
        },
        null,
        2,
      )}\n`,
    );
  } finally {
    await server.stop();
    await mock.stop();
  }
}

await main();
