import type { Insertable, Kysely } from 'kysely';
import type { Database, TaskLogTable } from '../db/schema.js';
import { operationOf } from '../llm/dialects/registry.js';
import { ATTR_GEN_AI_OPERATION_NAME, ATTR_GEN_AI_REQUEST_MODEL } from '../shared/genai-attributes.js';
import { type StoredSpan, storeSpansIn } from './trace-store.js';

type NewLogRow = Insertable<TaskLogTable>;

/** The stored prompt a gateway call was rendered from, on its span. */
export const ATTR_EVALGATE_PROMPT_ID = 'evalgate.prompt.id';
export const ATTR_EVALGATE_PROMPT_VERSION = 'evalgate.prompt.version';

/** The scope of the span rows the gateway writes for its own calls (how reads tell them apart). */
export const GATEWAY_SCOPE = 'evalgate.gateway';
const SCOPE_TEXT = JSON.stringify({ name: GATEWAY_SCOPE, version: null });
const RESOURCE_TEXT = JSON.stringify({ 'service.name': 'evalgate' });
/** Task logs made from ingested spans (src/traces/task-log.ts): their span is stored already. */
const INGESTED_LOG = 'log_otlp';

const tokens = (usage: string | null | undefined, field: string): number => {
  if (!usage) return 0;
  const m = new RegExp(`"${field}":(\\d+)`).exec(usage);
  return m ? Number(m[1]) : 0;
};

/**
 * A recorded gateway call as a span row of its trace: the call's own span (the trace it started, or the
 * caller's trace under its `traceparent`). It makes the trace listed by `GET /v1/traces`, filterable by
 * model and errors, and pruned with the other spans; the trace view shows the call from its task log.
 */
export function gatewaySpanOf(log: NewLogRow): StoredSpan | null {
  if (!log.trace_id || !log.span_id || log.id.startsWith(INGESTED_LOG)) return null;
  const operation = operationOf(/"route":"([a-z_]+)"/.exec(log.metadata)?.[1]);
  const input = tokens(log.usage, 'prompt_tokens');
  const output = tokens(log.usage, 'completion_tokens');
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
      events: '[]',
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

/** Writes the span rows of a batch's gateway calls, inside the batch's transaction. */
export async function recordGatewaySpans(trx: Kysely<Database>, logs: readonly NewLogRow[]): Promise<void> {
  const spans: StoredSpan[] = [];
  for (const log of logs) {
    const span = gatewaySpanOf(log);
    if (span) spans.push(span);
  }
  if (spans.length > 0) await storeSpansIn(trx, spans);
}
