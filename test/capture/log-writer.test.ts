import { setImmediate as yieldTurn } from 'node:timers/promises';
import { type Kysely, sql } from 'kysely';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createThreadedLogWriter } from '../../src/capture/threaded-writer.js';
import type { LogWriter, TaskLogRecord } from '../../src/capture/types.js';
import { createLogWriter } from '../../src/capture/writer.js';
import { insertContainer } from '../../src/catalog/containers/repository.js';
import { type DatabaseHandle, openDatabase } from '../../src/db/database.js';
import type { Database } from '../../src/db/schema.js';
import { newId, nowIso } from '../../src/shared/ids.js';
import { ensureProject } from '../../src/tenancy/projects.js';
import { canChangeClasses, policyOf } from '../helpers/chrt.js';
import { type FreshDatabase, freshDatabase, PG_ADMIN_URL, testDbKind } from '../helpers/databases.js';
import { waitFor } from '../helpers/wait.js';

let fresh: FreshDatabase;
let handle: DatabaseHandle;
let projectId: string;
let containers: string[];

beforeEach(async () => {
  fresh = await freshDatabase();
  handle = await openDatabase(fresh.url);
  await handle.migrate();
  projectId = (await ensureProject(handle.db, 'writer')).id;
  containers = [];
  for (let i = 0; i < 5; i++) {
    const id = newId('ctr');
    const now = nowIso();
    await insertContainer(handle.db, {
      id,
      project_id: projectId,
      label: `c${i}`,
      description: null,
      metadata: '{}',
      created_at: now,
      updated_at: now,
    });
    containers.push(id);
  }
});
afterEach(async () => {
  await handle.close();
  await fresh.drop();
});

function record(containerId: string, n: number): TaskLogRecord {
  return {
    id: newId('log'),
    projectId,
    containerId,
    model: 'openai/gpt-4o-mini',
    input: [{ role: 'user', content: `question ${n}` }],
    output: `answer ${n}`,
    request: { messages: [{ role: 'user', content: `question ${n}` }] },
    response: { id: `resp-${n}` },
    usage: { prompt_tokens: 3, completion_tokens: 2, total_tokens: 5 },
    latencyMs: 12,
    cost: 0.00001,
    status: 'success',
    error: null,
    metadata: { n },
    createdAt: nowIso(),
  };
}

/** How long a write may take before it counts as a wait. */
const WAIT_MS = 50;
/**
 * How many writes may take longer: a pause of the whole process (a garbage collection, the machine's
 * scheduler under load) can land inside one. A writer that waited on the database would wait at every
 * batch: far more often.
 */
const PAUSES_ALLOWED = 3;

interface Waits {
  /** The slowest write's wall time. */
  ms: number;
  /** Writes slower than WAIT_MS. */
  slow: number;
}

/** Calls write and measures it: a caller must never wait on the database, and never see an error. */
function timedWrite(writer: LogWriter, r: TaskLogRecord, worst: Waits): void {
  const t0 = performance.now();
  writer.write(r);
  const ms = performance.now() - t0;
  worst.ms = Math.max(worst.ms, ms);
  if (ms >= WAIT_MS) worst.slow++;
}

/** No write waited: at most PAUSES_ALLOWED were slower than WAIT_MS. */
function expectNoWait(worst: Waits): void {
  expect(
    worst.slow,
    `writes slower than ${WAIT_MS} ms (the slowest: ${worst.ms.toFixed(1)} ms)`,
  ).toBeLessThanOrEqual(PAUSES_ALLOWED);
}

/**
 * `callers` concurrent callers write `each` records apiece, spread over the containers and yielding
 * every `yieldEvery` writes. Returns the ids sent to each container, in order, and the slowest write.
 */
async function writeConcurrently(writer: LogWriter, callers: number, each: number, yieldEvery: number) {
  const sent = new Map<string, string[]>(containers.map((c) => [c, []]));
  const worst: Waits = { ms: 0, slow: 0 };
  const caller = async (k: number) => {
    for (let i = 0; i < each; i++) {
      const c = containers[(k + i) % containers.length]!;
      const r = record(c, k * each + i);
      sent.get(c)!.push(r.id);
      timedWrite(writer, r, worst);
      if (i % yieldEvery === 0) await yieldTurn();
    }
  };
  await Promise.all(Array.from({ length: callers }, (_, k) => caller(k)));
  return { sent, worst };
}

/** Every stored log of the container, in seq order; checks that seqs are exactly 1..n. */
async function storedSeqs(db: Kysely<Database>, containerId: string): Promise<string[]> {
  const rows = await db
    .selectFrom('task_logs')
    .select(['id', 'seq'])
    .where('container_id', '=', containerId)
    .orderBy('seq')
    .execute();
  rows.forEach((r, i) => {
    if (Number(r.seq) !== i + 1) throw new Error(`container ${containerId}: seq ${r.seq} at position ${i}`);
  });
  return rows.map((r) => r.id);
}

describe('log writer', () => {
  it('stores 100,000 records from 200 concurrent callers, gap-free and in order per container', {
    timeout: 240_000,
  }, async () => {
    const writer = createLogWriter(handle.db, { batchSize: 1000, flushMs: 20, maxBuffered: 200_000 });
    const { sent, worst } = await writeConcurrently(writer, 200, 500, 25);
    await writer.close();
    expect(writer.stats()).toEqual({ accepted: 100_000, written: 100_000, failed: 0, buffered: 0 });
    for (const c of containers) {
      // Within a container, seq order is the order the records were written in.
      expect(await storedSeqs(handle.db, c)).toEqual(sent.get(c));
    }
    expectNoWait(worst);
  });

  it('gives two writers on separate connections (two processes) disjoint, gap-free seqs', {
    timeout: 120_000,
  }, async () => {
    const second = await openDatabase(fresh.url);
    try {
      const writers = [handle, second].map((d) => createLogWriter(d.db, { batchSize: 50, flushMs: 5 }));
      const ids = new Set<string>();
      await Promise.all(
        writers.map(async (w, k) => {
          for (let i = 0; i < 4000; i++) {
            const r = record(containers[i % 2]!, i + k * 10_000);
            ids.add(r.id);
            w.write(r);
            if (i % 100 === 0) await yieldTurn();
          }
          await w.close();
        }),
      );
      for (const w of writers) expect(w.stats().failed).toBe(0);
      const stored = [
        ...(await storedSeqs(handle.db, containers[0]!)),
        ...(await storedSeqs(handle.db, containers[1]!)),
      ];
      expect(stored).toHaveLength(8000);
      expect(new Set(stored)).toEqual(ids);
    } finally {
      await second.close();
    }
  });

  it('drops and counts records of deleted containers without losing the rest of the batch', async () => {
    const writer = createLogWriter(handle.db, { batchSize: 100, flushMs: 5 });
    const gone = newId('ctr');
    for (let i = 0; i < 10; i++) writer.write(record(i % 2 ? gone : containers[0]!, i));
    await writer.flush();
    expect(writer.stats()).toMatchObject({ accepted: 10, written: 5, failed: 5 });
    expect(await storedSeqs(handle.db, containers[0]!)).toHaveLength(5);
    await writer.close();
    writer.write(record(containers[0]!, 99));
    expect(writer.stats().failed).toBe(6);
  });

  it('drops only the record the database refuses, not the batch it came in', async () => {
    const warnings: string[] = [];
    const writer = createLogWriter(handle.db, {
      batchSize: 100,
      flushMs: 5,
      warn: (m) => warnings.push(m),
    });
    const first = record(containers[0]!, 0);
    writer.write(first);
    await writer.flush();
    expect(writer.stats()).toMatchObject({ written: 1, failed: 0 });
    // The same id again, in the middle of a batch: the primary key refuses that row and so the batch.
    const fresh = Array.from({ length: 9 }, (_, i) => record(containers[i % 2]!, i + 1));
    for (const [i, r] of fresh.entries()) {
      writer.write(r);
      if (i === 4) writer.write({ ...first, output: 'again' });
    }
    await writer.flush();
    expect(writer.stats()).toMatchObject({ accepted: 11, written: 10, failed: 1, buffered: 0 });
    const ids = await handle.db.selectFrom('task_logs').select(['id', 'output']).execute();
    expect(ids.map((r) => r.id).sort()).toEqual([first, ...fresh].map((r) => r.id).sort());
    expect(ids.find((r) => r.id === first.id)?.output).toBe('answer 0');
    expect(warnings).toHaveLength(1);
    expect(warnings[0]).toContain(`refused task log ${first.id}`);
    // Sequence numbers stay without gaps in each container (storedSeqs checks).
    expect((await storedSeqs(handle.db, containers[0]!)).length).toBe(6);
    expect((await storedSeqs(handle.db, containers[1]!)).length).toBe(4);
    await writer.close();
  });

  it('keeps accepting while the database is down, counts what it could not write, and recovers', {
    timeout: 120_000,
  }, async () => {
    const writer = createLogWriter(handle.db, { batchSize: 20, flushMs: 10, maxBuffered: 500 });
    const outage = await databaseOutage(handle, fresh);
    const worst: Waits = { ms: 0, slow: 0 };
    let n = 0;
    let thrown = 0;
    const writeFor = async (ms: number) => {
      const until = Date.now() + ms;
      while (Date.now() < until) {
        try {
          timedWrite(writer, record(containers[n % 3]!, n++), worst);
        } catch {
          thrown++;
        }
        await new Promise((r) => setTimeout(r, 1));
      }
    };

    await writeFor(500);
    await writer.flush();
    const before = writer.stats();
    expect(before.written).toBeGreaterThan(0);
    expect(before.failed).toBe(0);

    await outage.stop();
    await writeFor(1500);
    await waitFor(() => writer.stats().failed > 0, 20_000, 'failures to be counted');
    const during = writer.stats();
    expect(during.failed).toBeGreaterThan(before.failed);

    await outage.start();
    await writer.flush();
    const failedAfterOutage = writer.stats().failed;
    await writeFor(500);
    await writer.close();
    const after = writer.stats();
    expect(thrown).toBe(0);
    expectNoWait(worst);
    expect(after.written).toBeGreaterThan(during.written);
    expect(after.failed).toBe(failedAfterOutage);
    expect(after.written + after.failed).toBe(n);
    // What was written is all there, and the failed batches left no gap in any container's seqs.
    let stored = 0;
    for (const c of containers.slice(0, 3)) stored += (await storedSeqs(handle.db, c)).length;
    expect(stored).toBe(after.written);
  });
});

/** Makes the writer's database refuse work, and then accept it again. */
async function databaseOutage(
  target: DatabaseHandle,
  db: FreshDatabase,
): Promise<{ stop(): Promise<void>; start(): Promise<void> }> {
  if (testDbKind() === 'sqlite') {
    // Another connection holds the write lock: every write transaction of the writer fails (SQLITE_BUSY).
    await sql`pragma busy_timeout = 20`.execute(target.db);
    const { default: SQLite } = await import('better-sqlite3');
    const blocker = new SQLite(db.url.slice('sqlite:'.length));
    return {
      async stop() {
        blocker.exec('BEGIN EXCLUSIVE');
      },
      async start() {
        blocker.exec('COMMIT');
        blocker.close();
      },
    };
  }
  // PostgreSQL: refuse new connections and end the existing ones, as when the server goes away.
  const { default: pg } = await import('pg');
  const name = new URL(db.url).pathname.slice(1);
  const admin = new pg.Client({ connectionString: PG_ADMIN_URL });
  await admin.connect();
  return {
    async stop() {
      await admin.query(`ALTER DATABASE ${name} ALLOW_CONNECTIONS false`);
      await admin.query('SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = $1', [name]);
    },
    async start() {
      await admin.query(`ALTER DATABASE ${name} ALLOW_CONNECTIONS true`);
      await admin.end();
    },
  };
}

/** Holds the database's write lock (SQLite) or the seq counters' table (PostgreSQL) until `release` resolves. */
async function holdWriters(db: Kysely<Database>, release: Promise<void>): Promise<void> {
  let locked!: () => void;
  const held = new Promise<void>((resolve) => {
    locked = resolve;
  });
  const done = db.transaction().execute(async (trx) => {
    if (testDbKind() === 'postgres') await sql`lock table task_log_counters in exclusive mode`.execute(trx);
    else await sql`update containers set description = description`.execute(trx);
    locked();
    await release;
  });
  await held;
  void done;
}

describe('log writer on its own thread', () => {
  it.skipIf(!canChangeClasses())(
    'runs in the idle scheduling class while it keeps up, and gets its share back when it falls behind or a flush is awaited',
    { timeout: 30_000 },
    async () => {
      // maxBuffered 400: the share comes back at a backlog of 100 and goes again at 20.
      const writer = createThreadedLogWriter(fresh.url, { batchSize: 50, flushMs: 5, maxBuffered: 400 });
      /** The thread is in that class, no change under way, and Linux says so. */
      const settledIn = (idle: boolean) => () => {
        const { tid, idleClass, switching } = writer.thread();
        return tid !== null && !switching && idleClass === idle && policyOf(tid) === (idle ? 5 : 0);
      };
      let release!: () => void;
      const lockWriters = () =>
        holdWriters(
          handle.db,
          new Promise<void>((resolve) => {
            release = resolve;
          }),
        );

      writer.write(record(containers[0]!, 0));
      await writer.flush();
      await waitFor(settledIn(true), 5000, 'the idle class');

      await lockWriters();
      for (let i = 1; i <= 300; i++) writer.write(record(containers[0]!, i));
      await waitFor(settledIn(false), 3000, 'the normal class while behind');
      release();
      await writer.flush();
      await waitFor(settledIn(true), 5000, 'the idle class again');

      // A flush that is awaited gets the thread its share until it is done, however small the backlog.
      await lockWriters();
      for (let i = 301; i <= 310; i++) writer.write(record(containers[0]!, i));
      const flushing = writer.flush();
      await waitFor(settledIn(false), 3000, 'the normal class while a flush is awaited');
      release();
      await flushing;
      await waitFor(settledIn(true), 5000, 'the idle class after the flush');
      expect(writer.stats()).toMatchObject({ accepted: 311, written: 311, failed: 0 });
      await writer.close();
    },
  );

  it('stores records from many callers gap-free and in order per container, never making a caller wait', {
    timeout: 120_000,
  }, async () => {
    const writer = createThreadedLogWriter(fresh.url, { batchSize: 500, flushMs: 20 });
    const { sent, worst } = await writeConcurrently(writer, 100, 200, 20);
    await writer.flush();
    expect(writer.stats()).toEqual({ accepted: 20_000, written: 20_000, failed: 0, buffered: 0 });
    for (const c of containers) expect(await storedSeqs(handle.db, c)).toEqual(sent.get(c));
    expectNoWait(worst);
    await writer.close();
    writer.write(record(containers[0]!, 1));
    expect(writer.stats()).toMatchObject({ accepted: 20_000, failed: 1 });
  });

  it('stores the request text as sent and assembles streamed answers from their event stream', async () => {
    const writer = createThreadedLogWriter(fresh.url, { flushMs: 5 });
    const requestText = '{"model":"m","messages":[{"role":"user","content":"Hi"}],"stream":true}';
    const chunk = (delta: object, finish: string | null = null) =>
      JSON.stringify({
        id: 'c1',
        created: 7,
        model: 'up',
        choices: [{ index: 0, delta, finish_reason: finish }],
      });
    const base = { ...record(containers[0]!, 0), request: undefined, input: undefined, requestText };
    writer.write({
      ...base,
      id: 'log_stream_ok',
      output: null,
      responseSse: `data: ${chunk({ role: 'assistant', content: 'Hel' })}\n\ndata: ${chunk({ content: 'lo' }, 'stop')}\n\ndata: [DONE]\n\n`,
    });
    writer.write({ ...base, id: 'log_stream_failed', output: null, status: 'error', responseSse: '' });
    await writer.close();
    const rows = await handle.db.selectFrom('task_logs').selectAll().orderBy('seq').execute();
    expect(rows.map((r) => r.id)).toEqual(['log_stream_ok', 'log_stream_failed']);
    expect(rows[0]!.request).toBe(requestText);
    expect(JSON.parse(rows[0]!.input)).toEqual([{ role: 'user', content: 'Hi' }]);
    expect(rows[0]!.output).toBe('Hello');
    expect(JSON.parse(rows[0]!.response)).toMatchObject({
      id: 'c1',
      model: 'up',
      choices: [{ message: { role: 'assistant', content: 'Hello' }, finish_reason: 'stop' }],
      // The usage chunk was not among the chunks: the call's usage is recorded with the answer.
      usage: { prompt_tokens: 3, completion_tokens: 2, total_tokens: 5 },
    });
    expect(rows[1]!.output).toBeNull();
  });

  it('bounds what it holds: past maxBuffered records are dropped and counted, the rest stored', async () => {
    const writer = createThreadedLogWriter(fresh.url, { batchSize: 50, flushMs: 5, maxBuffered: 100 });
    for (let i = 0; i < 1000; i++) writer.write(record(containers[i % 2]!, i));
    await writer.close();
    const stats = writer.stats();
    expect(stats.failed).toBeGreaterThan(0);
    expect(stats.written + stats.failed).toBe(1000);
    expect(stats.accepted).toBe(stats.written);
    let stored = 0;
    for (const c of containers.slice(0, 2)) stored += (await storedSeqs(handle.db, c)).length;
    expect(stored).toBe(stats.written);
  });

  it('holds records while its database cannot be reached, and counts them as failed only at close', async () => {
    const writer = createThreadedLogWriter('postgres://nobody@127.0.0.1:1/none', { flushMs: 5 });
    for (let i = 0; i < 10; i++) writer.write(record(containers[0]!, i));
    await writer.flush();
    // Held for when the database comes back, not dropped.
    expect(writer.stats()).toMatchObject({ accepted: 10, written: 0, failed: 0, buffered: 10 });
    await writer.close();
    expect(writer.stats()).toMatchObject({ accepted: 10, written: 0, failed: 10, buffered: 0 });
  });
});
