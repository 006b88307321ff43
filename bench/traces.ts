/**
 * The trace store's cost (docs/traces.md, "Figures"), with the method of bench/method.ts:
 *
 * 1. Ingest: OTLP batches (200 spans, traces of 10: a root, five GenAI ≥ 1.37 model calls — each also
 *    becomes a task log — and four tool spans) sent to `evalgate serve` (the build, its own process) by
 *    4 concurrent clients; protobuf and JSON alternate, in `--rounds` rounds (≥ 5). Per round and format:
 *    spans per second (until the server is idle again, the spans and their task logs stored) and the
 *    server's CPU per span (utime + stime of the whole process, every thread, from /proc). Median and range.
 *    Request bodies are encoded before the clock starts; the client's CPU is not counted.
 * 2. Reads: `--stored` spans written straight into the database (bench/traces-seed.ts), then p50/p95 of
 *    `GET /v1/traces/{id}` and of filtered `GET /v1/traces` lists (container + time, model, errors,
 *    session) through the server.
 *
 *   npm run bench:traces                                  # SQLite, 1,000,000 spans stored
 *   npm run bench:traces -- --db postgres                 # a fresh PostgreSQL database (dropped after)
 *   npm run bench:traces -- --spans 20000 --rounds 5 --stored 1000000 --reads 300
 *   npm run bench:traces -- --calls-per-trace 0 --stored 1000   # spans only: no task logs made
 *
 * Prints one JSON document (progress on stderr), the load average before and after each part.
 */
import os from 'node:os';
import path from 'node:path';
import { openDatabase } from '../src/db/database.js';
import { percentiles, postgresDatabase, readFigures, summary, timedGet } from './databases.js';
import { arg, startServer } from './lib.js';
import { alternate, cpuPerCall, loadAverage } from './method.js';
import { encodeBodies, sendBodies } from './traces-ingest.js';
import { seededSession, seededTraceId, seedSpans } from './traces-seed.js';

const dbKind = arg('db', 'sqlite') === 'postgres' ? 'postgres' : 'sqlite';
const spansPerRound = Number(arg('spans', '20000'));
const perRequest = Number(arg('batch', '200'));
/** Model-call spans per trace of 10 (each also becomes a task log): 0 to 5. */
const callsPerTrace = Math.min(5, Math.max(0, Number(arg('calls-per-trace', '5'))));
const rounds = Math.max(5, Number(arg('rounds', '5')));
const stored = Number(arg('stored', '1000000'));
const reads = Number(arg('reads', '300'));
const PG_ADMIN = arg('pg-admin-url', 'postgres://postgres@127.0.0.1:5432/postgres');

async function main(): Promise<void> {
  const pg = dbKind === 'postgres' ? await postgresDatabase(PG_ADMIN, 'traces') : null;
  const server = await startServer(pg ? { EVALGATE_DATABASE_URL: pg.url } : {});
  const pid = server.child.pid!;
  const url = pg?.url ?? `sqlite:${path.join(server.dataDir, 'evalgate.db')}`;
  const auth = { authorization: `Bearer ${server.key}` };
  const out: Record<string, unknown> = {
    database: dbKind,
    cpu: os.cpus()[0]?.model,
    cores: os.availableParallelism(),
    node: process.version,
    load_before: loadAverage(),
  };
  try {
    // 1. Ingest, protobuf and JSON alternating.
    const bodies = {
      protobuf: encodeBodies('protobuf', spansPerRound, perRequest, callsPerTrace),
      json: encodeBodies('json', spansPerRound, perRequest, callsPerTrace),
    };
    const results = await alternate(
      rounds,
      (['protobuf', 'json'] as const).map((format) => ({
        name: format,
        run: async (round: number) => {
          // Fresh ids each round: the spans are new, not retries the store skips.
          const batch = bodies[format](round);
          const r = await cpuPerCall([pid], async () => {
            const t0 = performance.now();
            const sent = await sendBodies(server.url, auth, format, batch);
            return { calls: spansPerRound, ...sent, sending_ms: performance.now() - t0 };
          });
          // Until the server was idle again: its writers had stored the spans and their task logs.
          const seconds = (r.sending_ms + r.settle_ms) / 1000;
          return {
            spans_per_second: Math.round(spansPerRound / seconds),
            cpu_us_per_span: r.cpu_us_per_call,
            retried_503: r.retried,
          };
        },
      })),
    );
    out.ingest = {
      spans_per_round: spansPerRound,
      spans_per_request: perRequest,
      model_calls_per_trace_of_10: callsPerTrace,
      ...Object.fromEntries(
        [...results].map(([format, rs]) => [
          format,
          {
            spans_per_second: summary(rs.map((r) => r.spans_per_second)),
            cpu_us_per_span: summary(rs.map((r) => r.cpu_us_per_span)),
            retried_503: rs.reduce((n, r) => n + r.retried_503, 0),
          },
        ]),
      ),
      target: '>= 20000 spans/s per process',
      load_after: loadAverage(),
    };

    // 2. Reads with `stored` spans in the store.
    const handle = await openDatabase(url);
    const project = await handle.db
      .selectFrom('spans')
      .select(['project_id', 'container_id'])
      .where('container_id', 'is not', null)
      .limit(1)
      .executeTakeFirstOrThrow();
    process.stderr.write(`seeding ${stored} spans…\n`);
    const seed = await seedSpans(handle.db, project.project_id, project.container_id!, stored);
    await handle.close();
    const traces = seed.traces;
    const time = timedGet(server.url, auth);
    const pick = (i: number) => (i * 7919 + 13) % traces;
    // Warm-up: the first reads load pages into the caches.
    for (let i = 0; i < 20; i++) await time(`/v1/traces/${seededTraceId(pick(i + reads))}`);
    const lookups: number[] = [];
    for (let i = 0; i < reads; i++) lookups.push(await time(`/v1/traces/${seededTraceId(pick(i))}`));
    const day = encodeURIComponent(new Date(Date.now() - 86_400_000).toISOString());
    const lists: Record<string, (i: number) => string> = {
      container_and_time: () => `/v1/traces?container=default&since=${day}&limit=20`,
      model: () => '/v1/traces?model=gpt-4o&limit=20',
      errors: () => '/v1/traces?errors=true&limit=20',
      session: (i) => `/v1/traces?session=${seededSession(pick(i))}&limit=20`,
      unfiltered: () => '/v1/traces?limit=20',
    };
    const listTimes: Record<string, ReturnType<typeof percentiles>> = {};
    const rows = Math.max(50, Math.floor(reads / 3));
    for (const [name, route] of Object.entries(lists)) {
      for (let i = 0; i < 5; i++) await time(route(i + rows));
      const xs: number[] = [];
      for (let i = 0; i < rows; i++) xs.push(await time(route(i)));
      listTimes[name] = percentiles(xs);
    }
    const figures = readFigures(lookups, listTimes);
    out.reads = {
      stored_spans: stored,
      stored_traces: traces,
      seed_seconds: seed.seconds,
      trace_lookup_ms: figures.lookup,
      list_ms: figures.list,
      load_after: loadAverage(),
    };
    console.log(JSON.stringify(out, null, 2));
  } finally {
    await server.stop();
    await pg?.drop();
  }
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
