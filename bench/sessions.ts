/**
 * What sessions cost (docs/agents.md, "What it costs"), with the method of bench/method.ts:
 *
 * 1. Continuity: one `evalgate serve` (the build, its own process) with two containers, one keeping
 *    conversation continuity (the default) and one not. Gateway chat calls at a fixed rate (`--rate`,
 *    open loop) for `--duration` ms to one container, then the other, alternating in `--rounds` rounds
 *    (≥ 5). The calls are conversations of `--turns` turns, each turn's input repeating the earlier turns
 *    and the mock's answers, as an agent's calls do, with no session header: with continuity on the log
 *    writer finds each turn's session by the hash of the conversation so far; off, the calls have no
 *    session. Per round: the server's CPU per call (utime + stime of every thread, from /proc, until it is
 *    idle again), and how it split between the main thread and the log writer's. A first round of each is
 *    not counted (the server's first calls compile its code). The figure is the median of the per-round ratios on ÷ off, with their range; target ≤ 1.05.
 *    The sessions the on container got are counted (one per conversation when continuity found them).
 * 2. Reads: `--stored` task logs in sessions of 5 written straight into the database
 *    (bench/sessions-seed.ts), then p50/p95 of `GET /v1/sessions` lists (newest first, a container, one
 *    with errors, a model, a page deep in the list) and of `GET /v1/sessions/{id}` through the server.
 *
 *   npm run bench:sessions                                 # SQLite, 1,000,000 task logs stored
 *   npm run bench:sessions -- --db postgres                # a fresh PostgreSQL database (dropped after)
 *   npm run bench:sessions -- --rate 500 --duration 3000 --rounds 5 --stored 1000000 --reads 200
 *   npm run bench:sessions -- --stored 0                   # continuity only
 *
 * Prints one JSON document (progress on stderr), the load average before and after each part.
 */
import os from 'node:os';
import path from 'node:path';
import { openDatabase } from '../src/db/database.js';
import { percentiles, postgresDatabase, readFigures, summary, timedGet } from './databases.js';
import { api, arg, startMockProcess, startServer, threadCpuUs, threadSplit } from './lib.js';
import { runLoad } from './load.js';
import { alternate, cpuPerCall, loadAverage, perRound, ratioFigure } from './method.js';
import { seededSession, seedSessions } from './sessions-seed.js';

const dbKind = arg('db', 'sqlite') === 'postgres' ? 'postgres' : 'sqlite';
const rounds = Math.max(5, Number(arg('rounds', '5')));
const rate = Number(arg('rate', '500'));
const durationMs = Number(arg('duration', '3000'));
const warmupMs = Number(arg('warmup', '1000'));
const turns = Math.max(1, Number(arg('turns', '3')));
const stored = Number(arg('stored', '1000000'));
const reads = Number(arg('reads', '200'));
const maxSpread = Number(arg('max-spread', '0.25'));
const PG_ADMIN = arg('pg-admin-url', 'postgres://postgres@127.0.0.1:5432/postgres');

const log = (line: string) => process.stderr.write(`${line}\n`);

/** The mock upstream's answer to every chat call (its own short sentence), read once. */
async function mockAnswer(mockUrl: string): Promise<string> {
  const res = await fetch(`${mockUrl}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'Hello?' }] }),
  });
  const body = (await res.json()) as { choices: { message: { content: string } }[] };
  return body.choices[0]!.message.content;
}

/**
 * The n-th call of a load: turn `n % turns` of conversation `n / turns` (distinct per round and
 * container), its input the earlier turns and their answers, then the next question.
 */
function conversationBody(tag: string, answer: string) {
  return (n: number) => {
    const conversation = Math.floor(n / turns);
    const turn = n % turns;
    const messages: { role: string; content: string }[] = [
      { role: 'system', content: 'You are a travel agent. Use the tools you are given.' },
    ];
    for (let t = 0; t <= turn; t++) {
      messages.push({ role: 'user', content: `${tag} conversation ${conversation}: question ${t + 1}?` });
      if (t < turn) messages.push({ role: 'assistant', content: answer });
    }
    return JSON.stringify({ model: 'openai/gpt-4o-mini', messages });
  };
}

async function main(): Promise<void> {
  const pg = dbKind === 'postgres' ? await postgresDatabase(PG_ADMIN, 'sessions') : null;
  const mock = await startMockProcess({});
  const server = await startServer({
    ...(pg ? { EVALGATE_DATABASE_URL: pg.url } : {}),
    EVALGATE_RATE_LIMIT_PER_MINUTE: '10000000',
    EVALGATE_RATE_LIMIT_BURST: '10000000',
    OPENAI_API_KEY: 'sk-bench',
    OPENAI_BASE_URL: mock.baseUrl,
  });
  const pid = server.child.pid!;
  const url = pg?.url ?? `sqlite:${path.join(server.dataDir, 'evalgate.db')}`;
  const auth = { authorization: `Bearer ${server.key}` };
  const out: Record<string, unknown> = {
    benchmark: 'sessions',
    database: dbKind,
    cpu: os.cpus()[0]?.model,
    cores: os.availableParallelism(),
    node: process.version,
    load_before: loadAverage(),
  };
  try {
    const on = await api(server, 'POST', '/v1/containers', { label: 'continuity-on' });
    const off = await api(server, 'POST', '/v1/containers', {
      label: 'continuity-off',
      session_continuity: false,
    });
    const answer = await mockAnswer(mock.url);

    // 1. Continuity on and off, alternating, after one uncounted round of each (the server's first calls
    // compile its code and schemas).
    const results = await alternate(
      rounds + 1,
      [
        { name: 'on', label: on.label as string },
        { name: 'off', label: off.label as string },
      ].map(({ name, label }) => ({
        name,
        run: async (round: number) => {
          const threadsBefore = threadCpuUs(pid);
          const r = await cpuPerCall([pid], async () => {
            const r = await runLoad({
              origin: server.url,
              path: '/v1/chat/completions',
              headers: { 'content-type': 'application/json', 'x-evalgate-container': label, ...auth },
              body: '',
              bodyOf: conversationBody(`${name}-${round}`, answer),
              concurrency: 32,
              warmupMs,
              durationMs,
              ratePerS: rate,
            });
            return { calls: r.completed, rps: r.rps, errors: r.errors, p50_ms: r.p50_ms };
          });
          // Where the time went: the main thread, the log writer's thread, the rest (collector helpers…).
          const split = threadSplit(pid, threadsBefore, threadCpuUs(pid));
          const per = (us: number) => Math.round(us / Math.max(1, r.calls));
          return {
            ...r,
            main_us_per_call: per(split.main),
            writer_us_per_call: per(split.busiest_other),
            other_us_per_call: per(split.rest),
          };
        },
      })),
      log,
    );
    const callsOn = (results.get('on') ?? []).reduce((n, r) => n + r.calls, 0);
    for (const list of results.values()) list.shift();
    const cpu = (r: { cpu_us_per_call: number }) => r.cpu_us_per_call;
    const sessionsOn = await api(server, 'GET', `/v1/sessions?container=${on.label}&limit=1`);
    const sessionsOff = await api(server, 'GET', `/v1/sessions?container=${off.label}&limit=1`);
    out.continuity = {
      settings: { rate_per_s: rate, duration_ms: durationMs, warmup_ms: warmupMs, turns, rounds },
      cpu_us_per_call: {
        on: summary((results.get('on') ?? []).map(cpu)),
        off: summary((results.get('off') ?? []).map(cpu)),
      },
      writer_thread_us_per_call: {
        on: summary((results.get('on') ?? []).map((r) => r.writer_us_per_call)),
        off: summary((results.get('off') ?? []).map((r) => r.writer_us_per_call)),
      },
      main_thread_us_per_call: {
        on: summary((results.get('on') ?? []).map((r) => r.main_us_per_call)),
        off: summary((results.get('off') ?? []).map((r) => r.main_us_per_call)),
      },
      on_over_off: ratioFigure(perRound(results, 'on', 'off', cpu), maxSpread, 1.05),
      // Over every round, the uncounted first included: sessions made ÷ conversations sent.
      calls_on: callsOn,
      sessions_on: sessionsOn.total,
      conversations_on: Math.ceil(callsOn / turns),
      sessions_off: sessionsOff.total,
      per_round: Object.fromEntries(results),
      load_after: loadAverage(),
    };

    // 2. Reads with `stored` task logs in sessions.
    if (stored > 0) {
      const handle = await openDatabase(url);
      log(`seeding ${stored} task logs in sessions of 5…`);
      const t0 = performance.now();
      const sessions = await seedSessions(
        handle.db,
        on.project_id as string,
        [on.id as string, off.id as string],
        stored,
        5,
        log,
      );
      const seedSeconds = Math.round((performance.now() - t0) / 100) / 10;
      await handle.close();
      const time = timedGet(server.url, auth);
      const pick = (i: number) => (i * 7919 + 13) % sessions;
      for (let i = 0; i < 20; i++) await time(`/v1/sessions/${seededSession(pick(i + reads))}`);
      const gets: number[] = [];
      for (let i = 0; i < reads; i++) gets.push(await time(`/v1/sessions/${seededSession(pick(i))}`));
      const lists: Record<string, string> = {
        newest: '/v1/sessions?limit=20',
        container: `/v1/sessions?container=${on.label}&limit=20`,
        errors: '/v1/sessions?errors=true&limit=20',
        model: '/v1/sessions?model=gpt-4o&limit=20',
        deep_page: '/v1/sessions?limit=20&offset=10000',
      };
      const listTimes: Record<string, ReturnType<typeof percentiles>> = {};
      const n = Math.max(30, Math.floor(reads / 4));
      for (const [name, route] of Object.entries(lists)) {
        for (let i = 0; i < 3; i++) await time(route);
        const xs: number[] = [];
        for (let i = 0; i < n; i++) xs.push(await time(route));
        listTimes[name] = percentiles(xs);
      }
      const figures = readFigures(gets, listTimes);
      out.reads = {
        stored_task_logs: stored,
        stored_sessions: sessions,
        seed_seconds: seedSeconds,
        session_get_ms: figures.lookup,
        list_ms: figures.list,
        load_after: loadAverage(),
      };
    }
    console.log(JSON.stringify(out, null, 2));
  } finally {
    await server.stop();
    await mock.stop();
    await pg?.drop();
  }
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
