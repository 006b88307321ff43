import type { Kysely } from 'kysely';
import type { Database } from '../db/schema.js';
import { operationOf } from '../llm/dialects/registry.js';
import { ATTR_GEN_AI_OPERATION_NAME, ATTR_GEN_AI_REQUEST_MODEL } from '../shared/genai-attributes.js';
import type { NewLogRow } from './task-log-store.js';
import type { StoredSpan } from './trace-port.js';
import { createSqlTraceStore } from './trace-store.js';
import { type GuardNote, INGESTED_LOG_PREFIX, type TaskLogRecord } from './types.js';

/** The stored prompt a gateway call was rendered from, on its span. */
export const ATTR_EVALGATE_PROMPT_ID = 'evalgate.prompt.id';
export const ATTR_EVALGATE_PROMPT_VERSION = 'evalgate.prompt.version';

/** A guard's verdict on the call, one span event each (a score named after the guard). */
export const EVENT_EVALGATE_GUARD = 'evalgate.guard';
export const ATTR_EVALGATE_GUARD_NAME = 'evalgate.guard.name';
export const ATTR_EVALGATE_GUARD_STAGE = 'evalgate.guard.stage';
export const ATTR_EVALGATE_GUARD_VERDICT = 'evalgate.guard.verdict';
export const ATTR_EVALGATE_GUARD_SCORE = 'evalgate.guard.score';

/** The scope of the span rows the gateway writes for its own calls (how reads tell them apart). */
export const GATEWAY_SCOPE = 'evalgate.gateway';
const SCOPE_TEXT = JSON.stringify({ name: GATEWAY_SCOPE, version: null });
const RESOURCE_TEXT = JSON.stringify({ 'service.name': 'evalgate' });

/** What a call's span is built from besides its task log row: taken from the record, never from the row's JSON. */
export interface GatewaySpanFacts {
  operation: string;
  inputTokens: number;
  outputTokens: number;
  guards: readonly GuardNote[];
}

/**
 * A record spooled by a version whose records did not carry their span (a spool file left across an
 * upgrade): a gateway call's span is made as that version made it, from its route and with no verdicts.
 */
function spanOfEarlierRecord(r: TaskLogRecord): TaskLogRecord['span'] {
  if (r.id.startsWith(INGESTED_LOG_PREFIX)) return undefined;
  return { operation: operationOf(r.metadata?.route), guards: [] };
}

/** A token count as the record gives it (0 when it gives none). */
const count = (n: unknown): number => (typeof n === 'number' && Number.isFinite(n) ? n : 0);

/** The facts of a record's own span, or null when it gets none (no trace, or an ingested span's log). */
export function spanFactsOf(r: TaskLogRecord): GatewaySpanFacts | null {
  if (!r.traceId || !r.spanId) return null;
  const span = r.span ?? spanOfEarlierRecord(r);
  if (!span) return null;
  return {
    operation: span.operation,
    inputTokens: count(r.usage?.prompt_tokens),
    outputTokens: count(r.usage?.completion_tokens),
    guards: span.guards,
  };
}

/** The guards' verdicts as span events (OpenTelemetry attributes: a verdict without a score has none). */
function guardEvents(guards: readonly GuardNote[], callStart: string): string {
  if (guards.length === 0) return '[]';
  return JSON.stringify(
    guards.map((g) => ({
      name: EVENT_EVALGATE_GUARD,
      time: Number.isFinite(g.at) ? new Date(g.at).toISOString() : callStart,
      attributes: {
        [ATTR_EVALGATE_GUARD_NAME]: g.guard,
        [ATTR_EVALGATE_GUARD_STAGE]: g.stage,
        [ATTR_EVALGATE_GUARD_VERDICT]: g.verdict,
        ...(g.score === null ? {} : { [ATTR_EVALGATE_GUARD_SCORE]: g.score }),
      },
    })),
  );
}

/**
 * A recorded gateway call as a span row of its trace: the call's own span (the trace it started, or the
 * caller's trace under its `traceparent`). It makes the trace listed by `GET /v1/traces`, filterable by
 * model and errors, and pruned with the other spans; the trace view shows the call from its task log,
 * with this row's events (the guards' verdicts).
 */
export function gatewaySpanOf(log: NewLogRow, facts: GatewaySpanFacts): StoredSpan | null {
  if (!log.trace_id || !log.span_id) return null;
  const { operation, inputTokens: input, outputTokens: output } = facts;
  const latency = Number(log.latency_ms);
  const ended = new Date(Date.parse(log.created_at) + latency).toISOString();
  const cost = Number(log.cost);
  return {
    row: {
      project_id: log.project_id,
      trace_id: log.trace_id,
      span_id: log.span_id,
      parent_span_id: log.parent_span_id ?? null,
      container_id: log.container_id,
      name: `${operation} ${log.model}`,
      kind: 'client',
      operation,
      started_at: log.created_at,
      ended_at: ended,
      duration_ms: latency,
      status_code: log.status === 'error' ? 'error' : 'unset',
      status_message: null,
      attributes: JSON.stringify({
        [ATTR_GEN_AI_OPERATION_NAME]: operation,
        [ATTR_GEN_AI_REQUEST_MODEL]: log.model,
        ...(log.prompt_id
          ? { [ATTR_EVALGATE_PROMPT_ID]: log.prompt_id, [ATTR_EVALGATE_PROMPT_VERSION]: log.prompt_version }
          : {}),
      }),
      events: guardEvents(facts.guards, log.created_at),
      resource: RESOURCE_TEXT,
      scope: SCOPE_TEXT,
      session_id: log.session_id ?? null,
      model: log.model,
      model_call: JSON.stringify({
        task_log_id: log.id,
        provider: null,
        model: log.model,
        request_model: log.model,
        response_model: null,
        usage: { input_tokens: input, output_tokens: output, total_tokens: input + output },
        cost,
        content_captured: true,
      }),
      task_log_id: log.id,
      received_at: log.created_at,
    },
    serviceName: 'evalgate',
    call: { inputTokens: input, outputTokens: output, cost },
  };
}

/**
 * Writes the span rows of a batch's gateway calls inside the batch's transaction, so that they commit
 * with their task logs (the task-log writer and the trace store share the SQL database).
 */
export async function recordGatewaySpans(
  trx: Kysely<Database>,
  logs: readonly NewLogRow[],
  factsOf: (log: NewLogRow) => GatewaySpanFacts | null,
): Promise<void> {
  const spans: StoredSpan[] = [];
  for (const log of logs) {
    const f = factsOf(log);
    const span = f ? gatewaySpanOf(log, f) : null;
    if (span) spans.push(span);
  }
  if (spans.length > 0) await createSqlTraceStore(trx).store(spans);
}
