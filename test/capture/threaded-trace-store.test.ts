import { sql } from 'kysely';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { SpanStoreUnavailableError } from '../../src/capture/span-lane.js';
import { createThreadedTraceStore } from '../../src/capture/threaded-trace-store.js';
import type { StoredSpan } from '../../src/capture/trace-port.js';
import { createSqlTraceStore } from '../../src/capture/trace-store.js';
import { type DatabaseHandle, openDatabase } from '../../src/db/database.js';
import { nowIso, randomHex } from '../../src/shared/ids.js';
import { ensureProject } from '../../src/tenancy/projects.js';
import { type FreshDatabase, freshDatabase } from '../helpers/databases.js';

/**
 * The span store's thread (a SQLite file): the span lane's batches are inserted there, on a connection of
 * its own, and what it reports new is what was stored; a span sent again is skipped; a database error
 * comes back with its code; a store that can no longer reach its thread says so with the error the span
 * lane keeps batches for.
 */
let fresh: FreshDatabase;
let handle: DatabaseHandle;
let projectId: string;

beforeEach(async () => {
  fresh = await freshDatabase('sqlite');
  handle = await openDatabase(fresh.url);
  await handle.migrate();
  projectId = (await ensureProject(handle.db, 'spans')).id;
});
afterEach(async () => {
  await handle.close();
  await fresh.drop();
});

function span(traceId: string, name: string): StoredSpan {
  const now = nowIso();
  return {
    row: {
      project_id: projectId,
      trace_id: traceId,
      span_id: randomHex(8),
      parent_span_id: null,
      container_id: null,
      name,
      kind: 'internal',
      operation: null,
      started_at: now,
      ended_at: now,
      duration_ms: 0,
      status_code: 'unset',
      status_message: null,
      attributes: '{}',
      events: '[]',
      resource: '{}',
      scope: null,
      session_id: null,
      model: null,
      model_call: null,
      task_log_id: null,
      received_at: now,
    },
    serviceName: 'svc',
    call: null,
  };
}

// The thread serves a SQLite file only (PostgreSQL's inserts are not work of the event loop).
describe.skipIf(process.env.EVALGATE_TEST_DB === 'postgres')('the span store on its thread', () => {
  it('stores a batch on the thread, answers the new spans, and skips them sent again', async () => {
    const store = createThreadedTraceStore(fresh.url, createSqlTraceStore(handle.db));
    try {
      const traceId = randomHex(16);
      const batch = [span(traceId, 'root'), span(traceId, 'child'), span(traceId, 'other')];
      const first = await store.store(batch);
      // The very objects handed in, in their order.
      expect(first).toEqual(batch);
      expect(first[0]).toBe(batch[0]);
      const again = [batch[1] as StoredSpan, span(traceId, 'late')];
      expect((await store.store(again)).map((s) => s.row.name)).toEqual(['late']);

      const rows = await handle.db
        .selectFrom('spans')
        .select('name')
        .where('trace_id', '=', traceId)
        .execute();
      expect(rows.map((r) => r.name).sort()).toEqual(['child', 'late', 'other', 'root']);
      const trace = await handle.db
        .selectFrom('traces')
        .select(['span_count', 'service_name'])
        .where('trace_id', '=', traceId)
        .executeTakeFirstOrThrow();
      expect(Number(trace.span_count)).toBe(4);
      expect(trace.service_name).toBe('svc');
    } finally {
      await store.close();
    }
  }, 30_000);

  it("answers the database's error with its code", async () => {
    const store = createThreadedTraceStore(fresh.url, createSqlTraceStore(handle.db));
    try {
      // The traces' summaries gone: the batch's transaction fails on the thread's connection.
      await sql`DROP TABLE traces`.execute(handle.db);
      const err = await store.store([span(randomHex(16), 'orphan')]).catch((e: Error) => e);
      expect(err).toBeInstanceOf(Error);
      expect((err as Error).message).toMatch(/no such table: traces/);
      expect((err as { code?: string }).code).toBe('SQLITE_ERROR');
      expect(err).not.toBeInstanceOf(SpanStoreUnavailableError);
    } finally {
      await store.close();
    }
  }, 30_000);

  it('refuses with SpanStoreUnavailableError once closed, and closes without a thread', async () => {
    const idle = createThreadedTraceStore(fresh.url, createSqlTraceStore(handle.db));
    await idle.close();
    const store = createThreadedTraceStore(fresh.url, createSqlTraceStore(handle.db));
    await store.store([span(randomHex(16), 'one')]);
    await store.close();
    await expect(store.store([span(randomHex(16), 'two')])).rejects.toBeInstanceOf(SpanStoreUnavailableError);
  }, 30_000);
});
