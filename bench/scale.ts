/**
 * Scale-out benchmark of evaluation runs: one `serve` with the BullMQ executor (API only, it enqueues) and
 * 1, 2, 4 … `evalgate worker` processes on one PostgreSQL database and one Redis. For each worker count a
 * judge run over N positions (default 100,000) against the mock upstream (default 50 ms latency) at a
 * total per-model concurrency (default 1024, which the Redis model limiter splits between the workers).
 * The best any executor can do is concurrency ÷ latency samples per second; the benchmark reports how
 * close each worker count gets, how well it scales against one worker, and, as the machine's own ceiling
 * measured in the same run, a bare client sending the same number of judge requests straight to the mock
 * at the same concurrency. Also: CPU per sample (workers plus serve), peak RSS per worker.
 *
 *   npm run bench:scale
 *   npm run bench:scale -- --positions 20000 --workers 1,2 --concurrency 256
 *   npm run bench:scale -- --cpu-prof       # writes each worker's CPU profile under bench/out/
 *
 * Flags: --positions, --latency-ms, --concurrency, --workers (comma-separated counts), --chunk-size,
 * --database-url (the PostgreSQL server to create a fresh database on, through the database the URL names;
 * default postgres://postgres@127.0.0.1:5432/postgres), --redis-url (default redis://127.0.0.1:6379),
 * --keep (leave the database), --run-timeout-s (default 1800), --tsx (run the sources, not the build).
 * The JSON result goes to stdout, progress to stderr.
 */
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import { Redis } from 'ioredis';
import pg from 'pg';
import {
  api,
  arg,
  type BenchWorker,
  cpuSeconds,
  cpuSecondsOf,
  judgeRequestBody,
  machineCpuSeconds,
  meanCallLatencyMs,
  rssMb,
  runRequests,
  setUpJudgeRun,
  startMockProcess,
  startServer,
  startWorker,
} from './lib.js';

const positions = Number(arg('positions', '100000'));
const latencyMs = Number(arg('latency-ms', '50'));
const concurrency = Number(arg('concurrency', '1024'));
const workerCounts = arg('workers', '1,2,4')
  .split(',')
  .map((n) => Number(n.trim()));
const chunkSize = Number(arg('chunk-size', '64'));
const adminUrl = arg('database-url', 'postgres://postgres@127.0.0.1:5432/postgres');
const redisUrl = arg('redis-url', 'redis://127.0.0.1:6379');
const keep = process.argv.includes('--keep');
const cpuProf = process.argv.includes('--cpu-prof');
const runTimeoutS = Number(arg('run-timeout-s', '1800'));

for (const [name, value] of [
  ['positions', positions],
  ['latency-ms', latencyMs],
  ['concurrency', concurrency],
  ['chunk-size', chunkSize],
  ...workerCounts.map((n) => ['workers', n] as const),
] as const) {
  if (!Number.isInteger(value) || value < 1) throw new Error(`--${name} must be a whole number ≥ 1`);
}

/** Command names of the PostgreSQL and Redis processes, whose CPU is reported when they run on this machine. */
const SERVICES = ['postgres', 'redis-server'];

const TARGETS = { speedup_4_vs_1: 3.5, samples_per_s_4: 15000, cpu_us_per_sample: 60 };

const log = (line: string) => process.stderr.write(`${line}\n`);
const round = (n: number, digits = 0) => Math.round(n * 10 ** digits) / 10 ** digits;

/** Cleanups, run last-in first-out once: at the end, on a failure, or on SIGINT/SIGTERM. */
const cleanups: Array<{ name: string; run: () => Promise<void> }> = [];
let cleaning: Promise<void> | null = null;
function cleanup(): Promise<void> {
  cleaning ??= (async () => {
    for (const c of cleanups.reverse()) {
      try {
        await c.run();
      } catch (err) {
        log(`cleanup (${c.name}) failed: ${(err as Error).message}`);
      }
    }
  })();
  return cleaning;
}
for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.once(signal, () => {
    log(`${signal}: cleaning up`);
    void cleanup().finally(() => process.exit(130));
  });
}

/** A fresh PostgreSQL database on the server of `adminUrl`; its URL and how to drop it. */
async function createDatabase(): Promise<{ url: string; name: string; drop(): Promise<void> }> {
  const name = `evalgate_bench_${randomBytes(6).toString('hex')}`;
  const admin = new pg.Client({ connectionString: adminUrl });
  await admin.connect();
  try {
    await admin.query(`CREATE DATABASE ${name}`);
  } finally {
    await admin.end();
  }
  const url = new URL(adminUrl);
  url.pathname = `/${name}`;
  return {
    url: url.toString(),
    name,
    async drop() {
      const client = new pg.Client({ connectionString: adminUrl });
      await client.connect();
      try {
        await client.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
      } finally {
        await client.end();
      }
    },
  };
}

/** A client that fails fast when Redis is away (no reconnection, no offline queue). */
function redisClient(): Redis {
  const redis = new Redis(redisUrl, {
    lazyConnect: true,
    connectTimeout: 5000,
    maxRetriesPerRequest: 0,
    retryStrategy: () => null,
    enableOfflineQueue: false,
  });
  redis.on('error', () => {});
  return redis;
}

/** Fails at once when Redis does not answer (`serve` would wait for it without end). */
async function checkRedis(): Promise<void> {
  const redis = redisClient();
  try {
    await redis.connect();
    await redis.ping();
  } catch (err) {
    throw new Error(`Redis at ${redisUrl} does not answer (${(err as Error).message}); see --redis-url`);
  } finally {
    redis.disconnect();
  }
}

/** Deletes every Redis key under the prefix (queues, limiter state). */
async function dropRedisKeys(prefix: string): Promise<number> {
  const redis = redisClient();
  try {
    await redis.connect();
    let cursor = '0';
    let deleted = 0;
    do {
      const [next, keys] = await redis.scan(cursor, 'MATCH', `${prefix}:*`, 'COUNT', 1000);
      cursor = next;
      if (keys.length) deleted += await redis.unlink(...keys);
    } while (cursor !== '0');
    return deleted;
  } finally {
    redis.disconnect();
  }
}

/**
 * CPU seconds so far of every process on this machine whose command name is one of `names` (PostgreSQL's
 * backends, Redis), by pid: their share of the cores when they run here. A process that ends between two
 * readings takes its time with it, so differences are a lower bound.
 */
function cpuByName(names: string[]): Map<number, { name: string; cpu: number }> {
  const out = new Map<number, { name: string; cpu: number }>();
  for (const entry of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = fs.readFileSync(`/proc/${entry}/stat`, 'utf8');
      const name = stat.slice(stat.indexOf('(') + 1, stat.lastIndexOf(')'));
      if (names.includes(name)) out.set(Number(entry), { name, cpu: cpuSecondsOf(`/proc/${entry}/stat`) });
    } catch {
      // The process ended while we looked.
    }
  }
  return out;
}

/** CPU seconds by command name between two `cpuByName` readings. */
function cpuByNameUsed(
  before: Map<number, { name: string; cpu: number }>,
  after: Map<number, { name: string; cpu: number }>,
): Record<string, number> {
  const used: Record<string, number> = {};
  for (const [pid, { name, cpu }] of after) {
    used[name] = (used[name] ?? 0) + cpu - (before.get(pid)?.cpu ?? 0);
  }
  return used;
}

interface CountResult {
  workers: number;
  status: string;
  scored: number;
  errors: number;
  seconds: number;
  samples_per_s: number;
  bound: number;
  ratio_to_bound: number;
  ratio_to_bare_client: number;
  scaling_efficiency: number | null;
  cpu_us_per_sample: number;
  peak_rss_mb_per_worker: number[];
  settings_per_worker: { model_concurrency_share: number; upstream_connections: number; chunks: number };
  chunks_per_worker: number[];
  cpu_s: {
    workers: number[];
    serve: number;
    mock: number;
    postgres: number;
    redis: number;
    bench: number;
    /** The machine's busy time not in the columns before: other processes on it, the kernel. */
    other: number;
    machine: number;
  };
  machine_cpu_utilisation: number;
  /** The judge call latency as the workers saw it (mean over a spread of positions). */
  avg_call_latency_ms: number;
  /**
   * samples/s × that latency (Little's law): judge calls under way on average, over the whole run (ramp-up and
   * tail included); the recorded latency includes any wait for an upstream connection.
   */
  avg_calls_in_flight: number;
}

async function main(): Promise<void> {
  const cores = os.availableParallelism();
  log(
    `bench:scale — ${positions} positions, ${latencyMs} ms latency, concurrency ${concurrency}, workers ${workerCounts.join(',')}, ${cores} cores`,
  );
  await checkRedis();
  const prefix = `egbench${randomBytes(4).toString('hex')}`;
  cleanups.push({
    name: 'redis keys',
    run: async () => {
      const n = await dropRedisKeys(prefix);
      log(`deleted ${n} Redis keys under ${prefix}:`);
    },
  });
  const database = await createDatabase();
  log(`database ${database.name}, Redis prefix ${prefix}`);
  cleanups.push({
    name: 'database',
    run: async () => {
      if (keep) {
        log(`--keep: database ${database.url} left in place`);
        return;
      }
      await database.drop();
      log(`dropped database ${database.name}`);
    },
  });
  const mock = await startMockProcess({
    MOCK_LATENCY_MS: String(latencyMs),
    MOCK_REPLY_JSON: JSON.stringify({ score: 1, reasoning: 'ok' }),
  });
  cleanups.push({ name: 'mock', run: () => mock.stop() });
  const common = {
    EVALGATE_DATABASE_URL: database.url,
    EVALGATE_EXECUTOR: 'bullmq',
    EVALGATE_REDIS_URL: redisUrl,
    EVALGATE_REDIS_PREFIX: prefix,
    EVALGATE_RUN_CHUNK_SIZE: String(chunkSize),
    // The total: the Redis model limiter splits it between the live workers.
    EVALGATE_MODEL_CONCURRENCY: String(concurrency),
    // The API is polled every 250 ms; the bench must never be rate limited.
    EVALGATE_RATE_LIMIT_PER_MINUTE: '1000000',
  };
  const server = await startServer(common);
  cleanups.push({ name: 'serve', run: () => server.stop() });
  log(`serve ${server.url} (pid ${server.child.pid})`);

  const tUpload = performance.now();
  const judgeId = await setUpJudgeRun(server, mock.baseUrl, positions);
  log(`uploaded ${positions} positions in ${round((performance.now() - tUpload) / 1000, 1)} s`);

  // The machine's own ceiling, in the same run: the judge request sent straight to the mock by a bare
  // undici client at the same total concurrency, as many requests as the run has positions.
  log('bare client baseline …');
  const bare = await runRequests({
    origin: mock.url,
    path: '/v1/chat/completions',
    headers: { 'content-type': 'application/json' },
    body: judgeRequestBody(),
    concurrency,
    requests: positions,
  });
  log(`bare client: ${bare.rps} requests/s (${bare.requests} in ${bare.seconds} s, ${bare.errors} errors)`);

  const db = new pg.Client({ connectionString: database.url });
  await db.connect();
  cleanups.push({ name: 'database client', run: () => db.end() });

  const bound = concurrency / (latencyMs / 1000);
  const results: CountResult[] = [];
  for (const n of workerCounts) {
    const share = Math.ceil(concurrency / n);
    const perWorker = {
      model_concurrency_share: share,
      upstream_connections: share,
      chunks: Math.ceil(share / chunkSize) + 2,
    };
    const env = {
      ...common,
      // The workers read the secrets (key pepper, credential key) from the server's data directory.
      EVALGATE_DATA_DIR: server.dataDir,
      EVALGATE_UPSTREAM_CONNECTIONS: String(perWorker.upstream_connections),
      EVALGATE_WORKER_CONCURRENCY: String(perWorker.chunks),
    };
    const nodeArgs = cpuProf ? ['--cpu-prof', '--cpu-prof-dir=bench/out'] : [];
    log(`${n} worker(s): starting …`);
    const workers: BenchWorker[] = [];
    const stopWorkers = () => Promise.all(workers.map((w) => w.stop())).then(() => {});
    cleanups.push({ name: `${n} workers`, run: stopWorkers });
    const started = await Promise.allSettled(
      Array.from({ length: n }, (_, i) =>
        startWorker(env, ['--environment', 'main'], nodeArgs, `worker ${i + 1}/${n}`),
      ),
    );
    for (const s of started) if (s.status === 'fulfilled') workers.push(s.value);
    const failed = started.find((s) => s.status === 'rejected');
    if (failed) throw (failed as PromiseRejectedResult).reason;

    const pids = [server.child.pid!, ...workers.map((w) => w.pid)];
    const cpu0 = {
      procs: pids.map(cpuSeconds),
      mock: cpuSeconds(mock.pid),
      services: cpuByName(SERVICES),
      self: process.cpuUsage(),
      machine: machineCpuSeconds(),
    };
    const src = { type: 'dataset', dataset: 'bench', range: `0:${positions}` };
    // From before the POST, as the CPU readings: the run may start before its 201 is back.
    const t0 = performance.now();
    const run = await api(server, 'POST', '/v1/evaluation/runs', {
      container: 'bench',
      evaluators: [judgeId],
      sample: src,
      ground_truth: src,
    });
    let status = run.status as string;
    let current = run;
    let lastLog = t0;
    while (!['completed', 'error', 'cancelled'].includes(status)) {
      await new Promise((r) => setTimeout(r, 250));
      current = await api(server, 'GET', `/v1/evaluation/runs/${run.id}`);
      status = current.status;
      const now = performance.now();
      if (now - lastLog > 5000) {
        lastLog = now;
        const p = current.metrics?.progress;
        log(
          `  ${round((now - t0) / 1000, 1)} s: ${status}, ${p?.done ?? '?'} / ${p?.total ?? '?'} positions`,
        );
      }
      if (now - t0 > runTimeoutS * 1000) {
        throw new Error(
          `run ${run.id} not finished after ${runTimeoutS} s: ${JSON.stringify(current).slice(0, 4000)}\n` +
            workers.map((w, i) => `worker ${i + 1} output:\n${w.output().slice(-4000)}`).join('\n'),
        );
      }
    }
    const seconds = (performance.now() - t0) / 1000;
    const cpu1 = {
      procs: pids.map(cpuSeconds),
      mock: cpuSeconds(mock.pid),
      services: cpuByName(SERVICES),
      self: process.cpuUsage(cpu0.self),
      machine: machineCpuSeconds(),
    };
    const services = cpuByNameUsed(cpu0.services, cpu1.services);
    const peakRss = workers.map((w) => rssMb(w.pid).peak);
    if (status !== 'completed') {
      throw new Error(
        `run ${run.id} ended ${status}: ${JSON.stringify(current).slice(0, 4000)}\n` +
          workers.map((w, i) => `worker ${i + 1} output:\n${w.output().slice(-4000)}`).join('\n'),
      );
    }
    const perEval = current.results.per_model[0].per_eval[judgeId];
    const callLatencyMs = await meanCallLatencyMs(server, run.id, positions);
    // Which worker executed how many chunks (each worker's id holds its pid).
    const owners = await db.query<{ owner: string | null; n: string }>(
      'SELECT owner, count(*) AS n FROM run_chunks WHERE run_id = $1 GROUP BY owner',
      [run.id],
    );
    const chunksPerWorker = workers.map((w) =>
      owners.rows.filter((r) => r.owner?.includes(`:${w.pid}:`)).reduce((a, r) => a + Number(r.n), 0),
    );
    log(`${n} worker(s): stopping …`);
    await stopWorkers();

    const used = cpu1.procs.map((c, i) => c - cpu0.procs[i]!);
    const serverCpu = used[0]!;
    const workersCpu = used.slice(1);
    const scored = perEval.num_scored as number;
    const machineCpu = cpu1.machine - cpu0.machine;
    const bench = (cpu1.self.user + cpu1.self.system) / 1e6;
    const known = [serverCpu, ...workersCpu, cpu1.mock - cpu0.mock, bench, ...Object.values(services)];
    const samplesPerS = scored / seconds;
    const one = results.find((r) => r.workers === 1);
    const result: CountResult = {
      workers: n,
      status,
      scored,
      errors: perEval.num_errors,
      seconds: round(seconds, 2),
      samples_per_s: round(samplesPerS),
      bound,
      ratio_to_bound: round(samplesPerS / bound, 3),
      ratio_to_bare_client: round(samplesPerS / bare.rps, 3),
      scaling_efficiency: n === 1 ? 1 : one ? round(samplesPerS / (n * one.samples_per_s), 3) : null,
      cpu_us_per_sample: round(((serverCpu + workersCpu.reduce((a, b) => a + b, 0)) / scored) * 1e6),
      peak_rss_mb_per_worker: peakRss,
      settings_per_worker: perWorker,
      chunks_per_worker: chunksPerWorker,
      cpu_s: {
        workers: workersCpu.map((c) => round(c, 1)),
        serve: round(serverCpu, 1),
        mock: round(cpu1.mock - cpu0.mock, 1),
        postgres: round(services.postgres ?? 0, 1),
        redis: round(services['redis-server'] ?? 0, 1),
        bench: round(bench, 1),
        other: round(Math.max(0, machineCpu - known.reduce((a, b) => a + b, 0)), 1),
        machine: round(machineCpu, 1),
      },
      machine_cpu_utilisation: round(machineCpu / (seconds * cores), 3),
      avg_call_latency_ms: round(callLatencyMs, 1),
      avg_calls_in_flight: round((samplesPerS * callLatencyMs) / 1000),
    };
    results.push(result);
    log(
      `${n} worker(s): ${result.samples_per_s} samples/s in ${result.seconds} s, ` +
        `${result.cpu_us_per_sample} µs CPU per sample, ratio to bound ${result.ratio_to_bound}`,
    );
  }

  const at = (n: number) => results.find((r) => r.workers === n);
  const four = at(4);
  const oneWorker = at(1);
  const speedup = four && oneWorker ? round(four.samples_per_s / oneWorker.samples_per_s, 2) : null;
  process.stdout.write(
    `${JSON.stringify(
      {
        machine: {
          available_parallelism: cores,
          cpu_model: os.cpus()[0]?.model ?? null,
          memory_gb: round(os.totalmem() / 1024 ** 3, 1),
          node: process.version,
          platform: `${os.platform()} ${os.release()}`,
        },
        parameters: {
          positions,
          latency_ms: latencyMs,
          concurrency_total: concurrency,
          workers: workerCounts,
          chunk_size: chunkSize,
          database: 'postgresql',
          redis: redisUrl,
          entry: process.argv.includes('--tsx') ? 'tsx (sources)' : 'dist (build)',
        },
        baseline: {
          bare_client_requests_per_s: bare.rps,
          requests: bare.requests,
          errors: bare.errors,
          seconds: bare.seconds,
          bound,
          ratio_to_bound: round(bare.rps / bound, 3),
        },
        results,
        targets: TARGETS,
        targets_met: {
          speedup_4_vs_1: speedup === null ? null : speedup >= TARGETS.speedup_4_vs_1,
          speedup_4_vs_1_measured: speedup,
          samples_per_s_4: four ? four.samples_per_s >= TARGETS.samples_per_s_4 : null,
          samples_per_s_4_measured: four?.samples_per_s ?? null,
          cpu_us_per_sample: four ? four.cpu_us_per_sample <= TARGETS.cpu_us_per_sample : null,
          cpu_us_per_sample_measured: four?.cpu_us_per_sample ?? null,
        },
        note:
          `The targets are for a 16-core machine; this one has ${cores}. The workers, serve, the mock, the ` +
          'bare client, PostgreSQL and Redis all share these cores, so below 16 the figures are bounded by CPU ' +
          '(see machine_cpu_utilisation). cpu_us_per_sample counts the workers and serve (not PostgreSQL, Redis ' +
          'or the mock; cpu_s shows theirs when they run on this machine, a lower bound); the ' +
          'cpu_us_per_sample target is checked at 4 workers.',
      },
      null,
      2,
    )}\n`,
  );
}

let failed = false;
try {
  await main();
} catch (err) {
  failed = true;
  log(`bench:scale failed: ${(err as Error).stack ?? String(err)}`);
} finally {
  await cleanup();
}
process.exit(failed ? 1 : 0);
