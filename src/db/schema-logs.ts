import type { ColumnType } from 'kysely';

/** bigint columns: PostgreSQL returns them as text, SQLite as numbers. */
type BigIntColumn = ColumnType<number | string, number, number>;

export interface TaskLogCounterTable {
  container_id: string;
  last_seq: BigIntColumn;
}

export interface TaskLogTable {
  id: string;
  project_id: string;
  container_id: string;
  seq: BigIntColumn;
  model: string;
  /** JSON: the request messages. */
  input: string;
  output: string | null;
  request: string;
  response: string;
  usage: string | null;
  latency_ms: number;
  cost: number;
  status: 'success' | 'error';
  error: string | null;
  metadata: string;
  created_at: string;
  /** W3C trace id (32 hex) of the trace the call belongs to; null for logs recorded before traces. */
  trace_id?: string | null;
  /** W3C span id (16 hex) of the call's own span. */
  span_id?: string | null;
  /** The session (conversation, agent run) the call belongs to. */
  session_id?: string | null;
  /** W3C span id of the caller's span the call is a child of (a `traceparent`'s parent id). */
  parent_span_id?: string | null;
  /** The stored prompt the call was made from (`prm_…`), when it referenced one. */
  prompt_id?: string | null;
  /** That prompt's version. */
  prompt_version?: number | null;
}
