import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ingestedLogId } from '../../src/capture/call-join.js';
import type { LogWriter, TaskLogRecord } from '../../src/capture/types.js';
import { createLogWriter } from '../../src/capture/writer.js';
import { insertContainer } from '../../src/catalog/containers/repository.js';
import { type DatabaseHandle, openDatabase } from '../../src/db/database.js';
import { newId, nowIso, randomHex } from '../../src/shared/ids.js';
import { ensureProject } from '../../src/tenancy/projects.js';
import { type FreshDatabase, freshDatabase } from '../helpers/databases.js';
import { waitFor } from '../helpers/wait.js';

/**
 * The task-log writer joins a call recorded twice — by the gateway, under its caller's span, and as
 * that span's own task log — into one task log, whatever the order the two reach it in: in one batch,
 * one after the other, or through two writers on separate connections (two processes).
 */
let fresh: FreshDatabase;
let handle: DatabaseHandle;
let projectId: string;
let containerId: string;

beforeEach(async () => {
  fresh = await freshDatabase();
  handle = await openDatabase(fresh.url);
  await handle.migrate();
  projectId = (await ensureProject(handle.db, 'join')).id;
  containerId = newId('ctr');
  const now = nowIso();
  await insertContainer(handle.db, {
    id: containerId,
    project_id: projectId,
    label: 'app',
    description: null,
    metadata: '{}',
    created_at: now,
    updated_at: now,
  });
});
afterEach(async () => {
  await handle.close();
  await fresh.drop();
});

/** One model call as the gateway records it and as its caller's span does (`spanId`: the span's id). */
function call(options: { gatewaySession?: string; spanSession?: string } = {}) {
  const traceId = randomHex(16);
  const spanId = randomHex(8);
  const base = {
    projectId,
    containerId,
    model: 'openai/gpt-4o-mini',
    input: [{ role: 'user', content: 'Weather in Oslo?' }],
    output: 'Sunny.',
    status: 'success' as const,
    error: null,
    createdAt: nowIso(),
    traceId,
  };
  const gateway: TaskLogRecord = {
    ...base,
    id: newId('log'),
    usage: { prompt_tokens: 12, completion_tokens: 7, total_tokens: 19 },
    latencyMs: 100,
    cost: 0.00002,
    metadata: { route: 'chat' },
    spanId: randomHex(8),
    parentSpanId: spanId,
    span: { operation: 'chat', guards: [] },
    ...(options.gatewaySession ? { sessionKey: options.gatewaySession } : {}),
  };
  const span: TaskLogRecord = {
    ...base,
    id: ingestedLogId(projectId, traceId, spanId),
    model: 'gpt-4o-mini',
    usage: { prompt_tokens: 12, completion_tokens: 7, total_tokens: 19 },
    latencyMs: 130,
    cost: 0.00003,
    metadata: { source: 'otlp', convention: 'genai', span_name: 'chat gpt-4o-mini', content_captured: true },
    spanId,
    parentSpanId: randomHex(8),
    ...(options.spanSession ? { sessionKey: options.spanSession } : {}),
  };
  return { gateway, span, spanId };
}

async function logs() {
  return handle.db.selectFrom('task_logs').selectAll().where('project_id', '=', projectId).execute();
}

async function sessions() {
  return handle.db.selectFrom('task_sessions').selectAll().where('project_id', '=', projectId).execute();
}

/** The one stored log: the gateway's, with the span's details, and its session counting it once. */
async function expectJoined(c: ReturnType<typeof call>, sessionKey: string) {
  const rows = await logs();
  expect(rows.map((r) => r.id)).toEqual([c.gateway.id]);
  const row = rows[0]!;
  expect(row).toMatchObject({ model: 'openai/gpt-4o-mini', cost: 0.00002, latency_ms: 100 });
  expect(row.span_id).toBe(c.gateway.spanId);
  expect(row.parent_span_id).toBe(c.spanId);
  expect(JSON.parse(row.metadata)).toEqual({
    route: 'chat',
    sources: ['gateway', 'otlp'],
    span_id: c.spanId,
    span_name: 'chat gpt-4o-mini',
    convention: 'genai',
  });
  const [session, ...others] = await sessions();
  expect(others).toEqual([]);
  expect(session).toMatchObject({ id: row.session_id, external_key: sessionKey });
  expect(Number(session!.turn_count)).toBe(1);
  expect(Number(session!.prompt_tokens)).toBe(12);
  expect(Number(session!.cost)).toBeCloseTo(0.00002, 12);
  expect(Number(session!.latency_ms)).toBeCloseTo(100, 6);
  // The gateway's span is written, under the caller's span, naming the joined log.
  const spans = await handle.db
    .selectFrom('spans')
    .select(['span_id', 'parent_span_id', 'task_log_id'])
    .where('project_id', '=', projectId)
    .execute();
  expect(spans).toEqual([{ span_id: c.gateway.spanId, parent_span_id: c.spanId, task_log_id: c.gateway.id }]);
}

async function closeAll(...writers: LogWriter[]) {
  for (const w of writers) await w.close();
}

describe('a call recorded by both the gateway and its caller’s span is one task log', () => {
  it('both in one batch: the gateway’s record, named by the span’s session when it named none', async () => {
    const writer = createLogWriter(handle.db, { flushMs: 10_000 });
    const c = call({ spanSession: 'conv-9' });
    writer.write(c.gateway);
    writer.write(c.span);
    await writer.flush();
    expect(writer.stats()).toMatchObject({ accepted: 2, written: 2, failed: 0, buffered: 0 });
    await expectJoined(c, 'conv-9');
    await closeAll(writer);
  });

  it('the gateway’s first, the span’s after: the span’s details join the stored log', async () => {
    const writer = createLogWriter(handle.db);
    const c = call({ gatewaySession: 'conv-1', spanSession: 'conv-1' });
    writer.write(c.gateway);
    await writer.flush();
    writer.write(c.span);
    await writer.flush();
    expect(writer.stats()).toMatchObject({ accepted: 2, written: 2, failed: 0 });
    await expectJoined(c, 'conv-1');
    await closeAll(writer);
  });

  it('the span’s first, the gateway’s after: the stored log becomes the gateway’s, its session’s totals too', async () => {
    const writer = createLogWriter(handle.db);
    const c = call({ gatewaySession: 'conv-2', spanSession: 'conv-2' });
    writer.write(c.span);
    await writer.flush();
    expect((await logs()).map((r) => r.id)).toEqual([c.span.id]);
    writer.write(c.gateway);
    await writer.flush();
    await expectJoined(c, 'conv-2');
    await closeAll(writer);
  });

  it('two writers on separate connections, one half each, at once: still one task log', async () => {
    const other = await openDatabase(fresh.url);
    try {
      const a = createLogWriter(handle.db, { flushMs: 10_000 });
      const b = createLogWriter(other.db, { flushMs: 10_000 });
      const c = call({ gatewaySession: 'conv-3', spanSession: 'conv-3' });
      a.write(c.gateway);
      b.write(c.span);
      await Promise.all([a.flush(), b.flush()]);
      // On SQLite one of them may find the database locked by the other (in this one process, its
      // synchronous wait holds the other's commit back): it holds its batch and tries again.
      await waitFor(async () => {
        await Promise.all([a.flush(), b.flush()]);
        return a.stats().buffered + b.stats().buffered === 0;
      }, 30_000);
      expect(a.stats().written + b.stats().written).toBe(2);
      await expectJoined(c, 'conv-3');
      await closeAll(a, b);
    } finally {
      await other.close();
    }
  });

  it('calls without a caller’s span, and spans without a gateway call, are stored as they are', async () => {
    const writer = createLogWriter(handle.db);
    const c = call();
    const { parentSpanId: _p, ...direct } = c.gateway;
    const alone = call().span;
    writer.write(direct);
    writer.write(alone);
    await writer.flush();
    expect((await logs()).map((r) => r.id).sort()).toEqual([direct.id, alone.id].sort());
    await closeAll(writer);
  });
});
