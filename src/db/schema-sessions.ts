import type { ColumnType } from 'kysely';

/** bigint columns: PostgreSQL returns them as text, SQLite as numbers. */
type BigIntColumn = ColumnType<number | string, number, number>;

/** How a session was first found or started (the rule that created it). */
export type SessionAssignment = 'header' | 'conversation' | 'trace' | 'continuity';

/** A session (a conversation, an agent's run): the task logs with its id, and their totals. */
export interface TaskSessionTable {
  id: string;
  project_id: string;
  container_id: string;
  assigned_by: SessionAssignment;
  /** The `X-Evalgate-Session` value, Responses conversation id or trace id that names it, if any. */
  external_key: string | null;
  started_at: string;
  last_activity_at: string;
  turn_count: number;
  error_count: number;
  prompt_tokens: BigIntColumn;
  completion_tokens: BigIntColumn;
  cost: number;
  latency_ms: number;
  /** JSON array of the model slugs its calls named, in first-use order. */
  models: string;
  /** When the session was ended explicitly; null while open (a later call opens it again). */
  ended_at: string | null;
}

/** An exact key (kind-prefixed) under which later calls of the container find a session. */
export interface TaskSessionKeyTable {
  container_id: string;
  key: string;
  session_id: string;
  created_at: string;
}
