/**
 * bench:traces' store filler: `count` spans in traces of 10 written straight into the database through the
 * trace store (`store`, one transaction per 10,000 spans), not through HTTP; then ANALYZE,
 * as autovacuum (PostgreSQL) or an operator's `ANALYZE` (SQLite) would leave the planner's statistics.
 *
 * The traces: one every 10 s back from now (1,000,000 spans: 100,000 traces over 11.6 days), half in the
 * project's default container, one in 10 calling gpt-4o (else gpt-4o-mini), one in 50 with an error, five
 * traces per session.
 */
import { type Kysely, sql } from 'kysely';
import type { StoredSpan } from '../src/capture/trace-port.js';
import { createSqlTraceStore } from '../src/capture/trace-store.js';
import type { Database } from '../src/db/schema.js';

export const SPANS_PER_TRACE = 10;
const PER_TRANSACTION = 10_000;

/** The seeded trace ids are not random: the n-th one is known to the reads without keeping a list. */
export const seededTraceId = (n: number) => `5eed${n.toString(16).padStart(28, '0')}`;
const spanId = (n: number, j: number) => `${(n * SPANS_PER_TRACE + j + 1).toString(16).padStart(16, '0')}`;
export const seededSession = (n: number) => `bench-session-${Math.floor(n / 5)}`;

const MODEL_CALL =
  '{"task_log_id":null,"provider":"openai","model":"MODEL","request_model":"MODEL","response_model":null,' +
  '"usage":{"input_tokens":120,"output_tokens":30,"total_tokens":150},"cost":0.00004,"content_captured":true}';

function traceSpans(projectId: string, containerId: string, n: number, now: number): StoredSpan[] {
  const out: StoredSpan[] = [];
  const start = now - n * 10_000;
  const model = n % 10 === 3 ? 'gpt-4o' : 'gpt-4o-mini';
  const call = MODEL_CALL.replaceAll('MODEL', model);
  for (let j = 0; j < SPANS_PER_TRACE; j++) {
    const isCall = j % 2 === 1;
    const at = new Date(start + j * 20).toISOString();
    const end = new Date(start + j * 20 + (j === 0 ? 400 : 15)).toISOString();
    out.push({
      row: {
        project_id: projectId,
        trace_id: seededTraceId(n),
        span_id: spanId(n, j),
        parent_span_id: j === 0 ? null : spanId(n, 0),
        container_id: n % 2 === 0 ? containerId : null,
        name: j === 0 ? 'invoke_agent' : isCall ? `chat ${model}` : 'execute_tool lookup',
        kind: isCall ? 'client' : 'internal',
        operation: j === 0 ? 'invoke_agent' : isCall ? 'chat' : 'execute_tool',
        started_at: at,
        ended_at: end,
        duration_ms: j === 0 ? 400 : 15,
        status_code: j === 9 && n % 50 === 7 ? 'error' : 'unset',
        status_message: null,
        attributes: isCall
          ? `{"gen_ai.operation.name":"chat","gen_ai.request.model":"${model}","gen_ai.usage.input_tokens":120}`
          : '{"gen_ai.operation.name":"execute_tool"}',
        events: '[]',
        resource: '{"service.name":"bench"}',
        scope: '{"name":"bench","version":null}',
        session_id: seededSession(n),
        model: isCall ? model : null,
        model_call: isCall ? call : null,
        task_log_id: null,
        received_at: at,
      },
      serviceName: 'bench',
      call: isCall ? { inputTokens: 120, outputTokens: 30, cost: 0.00004 } : null,
    });
  }
  return out;
}

/** Writes `count` spans (count / 10 traces); returns the seconds it took and the traces written. */
export async function seedSpans(
  db: Kysely<Database>,
  projectId: string,
  containerId: string,
  count: number,
): Promise<{ seconds: number; traces: number }> {
  const t0 = performance.now();
  const now = Date.now();
  const traces = Math.floor(count / SPANS_PER_TRACE);
  const store = createSqlTraceStore(db);
  for (let n = 0; n < traces; ) {
    const batch: StoredSpan[] = [];
    for (; n < traces && batch.length < PER_TRANSACTION; n++)
      batch.push(...traceSpans(projectId, containerId, n, now));
    await store.store(batch);
  }
  await sql`analyze`.execute(db);
  return { seconds: Math.round((performance.now() - t0) / 100) / 10, traces };
}
