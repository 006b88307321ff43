import type { ColumnType } from 'kysely';

type BigIntColumn = ColumnType<number | string, number, number>;

/** One span of a trace, as received over OTLP (JSON columns as text). */
export interface SpanTable {
  project_id: string;
  trace_id: string;
  span_id: string;
  parent_span_id: string | null;
  container_id: string | null;
  name: string;
  /** unspecified, internal, server, client, producer, consumer. */
  kind: string;
  /** gen_ai.operation.name or its equivalent (chat, invoke_agent, execute_tool, …). */
  operation: string | null;
  started_at: string;
  ended_at: string;
  duration_ms: number;
  /** unset, ok, error. */
  status_code: string;
  status_message: string | null;
  attributes: string;
  events: string;
  resource: string;
  scope: string | null;
  session_id: string | null;
  /** The model of a model-call span (response model, else request model). */
  model: string | null;
  /** JSON: the model call's view (provider, models, usage, cost, content_captured). */
  model_call: string | null;
  task_log_id: string | null;
  received_at: string;
}

/** What a trace adds up to, kept as its spans arrive. */
export interface TraceTable {
  project_id: string;
  trace_id: string;
  container_id: string | null;
  /** The root span's name. */
  name: string | null;
  service_name: string | null;
  session_id: string | null;
  started_at: string;
  ended_at: string;
  span_count: number;
  error_count: number;
  model_call_count: number;
  input_tokens: BigIntColumn;
  output_tokens: BigIntColumn;
  cost: number;
  updated_at: string;
}
