// The tables of monitors (online scoring) and of OpenAI-style evals.
import type { Generated } from 'kysely';

export interface MonitorTable {
  id: string;
  project_id: string;
  container_id: string;
  name: string;
  /** The monitor's long-lived run, whose chunks are the batches it selected. */
  run_id: string;
  /** JSON array of evaluator ids. */
  evaluators: string;
  sampling_rate: number;
  /** JSON: { models?, routes?, metadata? }. */
  filter: string;
  enabled: number;
  environment: string;
  /** JSON alert rule, or null. */
  alert: string | null;
  alert_secret: string | null;
  /** 'firing' | 'resolved' | null (never evaluated). */
  alert_state: string | null;
  /** Positions handed out so far (bigint: text on PostgreSQL). */
  next_position: Generated<number | string>;
  /** The last seq of the container's task logs selection has considered (bigint: text on PostgreSQL). */
  selected_through: Generated<number | string>;
  /** What the monitor scores: 'call' (each selected task log) or 'session' (each idle session). */
  unit: Generated<string>;
  /** Session monitors: seconds without a call after which a session is scored. */
  idle_seconds: number | null;
  /** Session monitors' cursor: the last seq of the container's task logs whose sessions were noted. */
  sessions_through: Generated<number | string>;
  created_at: string;
  updated_at: string;
}

/** A session a session monitor has noted (and sampled) and not yet scored: it waits to be idle. */
export interface MonitorPendingSessionTable {
  monitor_id: string;
  session_id: string;
  noted_at: string;
}

export interface MonitorSelectionTable {
  monitor_id: string;
  position: number;
  log_id: string;
  log_created_at: string;
  selected_at: string;
}

/** An OpenAI-style eval: its data source config and testing criteria (JSON, as answered). */
export interface EvalTable {
  id: string;
  project_id: string;
  name: string;
  metadata: string | null;
  data_source_config: string;
  testing_criteria: string;
  created_at: string;
  updated_at: string;
}

/** An eval run: the Evalgate run it is, and what it was created with. */
export interface EvalRunTable {
  run_id: string;
  eval_id: string;
  project_id: string;
  name: string;
  metadata: string | null;
  data_source: string;
  model: string;
  created_at: string;
}
