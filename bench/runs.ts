/**
 * Evaluation run benchmark: a judge run over N positions (default 100,000) against the mock upstream with
 * a fixed latency (default 50 ms) and a per-model concurrency (default 256). The best any executor can do
 * is concurrency ÷ latency samples per second; the benchmark reports how close Evalgate gets, and, as
 * the machine's own ceiling measured in the same run, the same request sent straight to the mock at the
 * same concurrency. Also: peak RSS, CPU per sample, and the time from the 201 to the first result.
 *
 *   npm run bench:runs
 *   npm run bench:runs -- --positions 20000 --latency-ms 20 --concurrency 128
 *   npm run bench:runs -- --cpu-prof        # writes the server's CPU profile under bench/out/
 */
import {
  api,
  arg,
  cpuSeconds,
  judgeRequestBody,
  meanCallLatencyMs,
  rssMb,
  setUpJudgeRun,
  startMockProcess,
  startServer,
} from './lib.js';
import { runLoad } from './load.js';

const positions = Number(arg('positions', '100000'));
const latencyMs = Number(arg('latency-ms', '50'));
const concurrency = Number(arg('concurrency', '256'));
const chunkSize = arg('chunk-size', '');

async function main(): Promise<void> {
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
    // The machine's own ceiling, measured in the same run: the same judge request sent straight to the
    // mock by a bare undici client at the same concurrency. Its CPU per call (this process does nothing
    // else meanwhile) is the floor of what sending a judge call and reading its answer costs.
    const directCpu0 = process.cpuUsage();
    const direct = await runLoad({
      origin: mock.url,
      path: '/v1/chat/completions',
      headers: { 'content-type': 'application/json' },
      // This bench's shorter system prompt (bench/scale.ts sends the judge's own).
      body: judgeRequestBody('You are an impartial evaluator. Reply with a JSON object {"score": n}.'),
      concurrency,
      warmupMs: 1000,
      durationMs: 5000,
    });
    const directCpu = process.cpuUsage(directCpu0);
    const directUsPerCall = (directCpu.user + directCpu.system) / direct.completed;
    const baseRss = rssMb(server.child.pid!).now;
    const src = { type: 'dataset', dataset: 'bench', range: `0:${positions}` };
    const cpu0 = { server: cpuSeconds(server.child.pid!), mock: cpuSeconds(mock.pid) };
    const t0 = performance.now();
    const run = await api(server, 'POST', '/v1/evaluation/runs', {
      container: 'bench',
      evaluators: [judgeId],
      sample: src,
      ground_truth: src,
    });
    let firstResultMs: number | null = null;
    let status = run.status as string;
    while (!['completed', 'error', 'cancelled'].includes(status)) {
      await new Promise((r) => setTimeout(r, firstResultMs === null ? 10 : 250));
      if (firstResultMs === null) {
        const samples = await api(server, 'GET', `/v1/evaluation/runs/${run.id}/samples?limit=1`);
        if (samples.total > 0) firstResultMs = performance.now() - t0;
      }
      status = (await api(server, 'GET', `/v1/evaluation/runs/${run.id}`)).status;
    }
    const seconds = (performance.now() - t0) / 1000;
    const cpu = {
      server: cpuSeconds(server.child.pid!) - cpu0.server,
      mock: cpuSeconds(mock.pid) - cpu0.mock,
    };
    const done = await api(server, 'GET', `/v1/evaluation/runs/${run.id}`);
    const perEval = done.results.per_model[0].per_eval[judgeId];
    // The judge call latency as the executor saw it, over a spread of positions.
    const callLatencyMs = await meanCallLatencyMs(server, run.id, positions);
    const samplesPerS = perEval.num_scored / seconds;
    const bound = concurrency / (latencyMs / 1000);
    process.stdout.write(
      `${JSON.stringify(
        {
          positions,
          status,
          scored: perEval.num_scored,
          errors: perEval.num_errors,
          seconds: Math.round(seconds * 100) / 100,
          samples_per_s: Math.round(samplesPerS),
          bound_per_s: bound,
          ratio: Math.round((samplesPerS / bound) * 1000) / 1000,
          direct_per_s: Math.round(direct.rps),
          ratio_to_direct: Math.round((samplesPerS / direct.rps) * 1000) / 1000,
          avg_call_latency_ms: Math.round(callLatencyMs * 10) / 10,
          first_result_ms: firstResultMs === null ? null : Math.round(firstResultMs),
          server_peak_rss_mb: rssMb(server.child.pid!).peak,
          // Where the machine's two cores went during the run: CPU seconds and µs per scored sample.
          server_cpu_s: Math.round(cpu.server * 10) / 10,
          server_us_per_sample: Math.round((cpu.server / perEval.num_scored) * 1e6),
          // The bare client's CPU per call (warm-up included), measured in the same run, and the ratio.
          direct_client_us_per_call: Math.round(directUsPerCall),
          server_per_sample_to_direct_call:
            Math.round((cpu.server / perEval.num_scored / (directUsPerCall / 1e6)) * 100) / 100,
          mock_cpu_s: Math.round(cpu.mock * 10) / 10,
          server_rss_before_run_mb: baseRss,
          spend_usd: done.spend,
          settings: { latency_ms: latencyMs, concurrency, chunk_size: chunkSize || 'default' },
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
