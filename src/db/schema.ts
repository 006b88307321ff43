import type { Generated } from 'kysely';
import type { EvaluatorType } from '../shared/grader-types.js';
import type { RunStatus } from '../shared/run-status.js';
import type { ModelApi } from '../shared/wire-protocol.js';
import type { BudgetSpendTable, BudgetTable } from './schema-budgets.js';
import type { RunConversationCallTable } from './schema-conversations.js';
import type {
  InvitationLinkTable,
  InvitationTable,
  MembershipTable,
  OidcLoginTable,
  PasswordAccountTable,
  SessionTable,
  SignInTokenTable,
  UserTable,
} from './schema-dashboard.js';
import type { DatasetItemTable, DatasetTable, DatasetVersionTable } from './schema-datasets.js';
import type {
  EvalRunTable,
  EvalTable,
  MonitorPendingSessionTable,
  MonitorSelectionTable,
  MonitorTable,
} from './schema-evals-monitors.js';
import type { GuardPolicyTable, GuardVerdictTable } from './schema-guards.js';
import type { SpanLogEventTable } from './schema-log-events.js';
import type { TaskLogCounterTable, TaskLogTable } from './schema-logs.js';
import type {
  PromptLabelMoveTable,
  PromptLabelTable,
  PromptTable,
  PromptVersionTable,
} from './schema-prompts.js';
import type {
  AnnotationAssignmentTable,
  AnnotationItemTable,
  AnnotationQueueTable,
  AnnotationReviewTable,
  AnnotationSettlementTable,
} from './schema-review.js';
import type { TaskSessionKeyTable, TaskSessionTable } from './schema-sessions.js';
import type { SpanTable, TraceTable } from './schema-traces.js';

export type { BudgetSpendTable, BudgetTable } from './schema-budgets.js';
export type {
  InvitationLinkTable,
  InvitationTable,
  MembershipTable,
  OidcLoginTable,
  PasswordAccountTable,
  SessionTable,
  SignInTokenTable,
  UserTable,
} from './schema-dashboard.js';
export type {
  EvalRunTable,
  EvalTable,
  MonitorSelectionTable,
  MonitorTable,
} from './schema-evals-monitors.js';
export type { TaskLogCounterTable, TaskLogTable } from './schema-logs.js';
export type { SpanTable, TraceTable } from './schema-traces.js';

/** The API a model's upstream speaks for generation. */
export type { ModelApi };

/** Timestamps are ISO-8601 strings in UTC; JSON documents are stored as text. Same shape on both dialects. */
export interface OrganizationTable {
  id: string;
  name: string;
  created_at: string;
}

export interface ProjectTable {
  id: string;
  organization_id: string;
  name: string;
  created_at: string;
}

export interface ApiKeyTable {
  id: string;
  project_id: string;
  name: string;
  /** The first characters of the key, shown in listings so a user can tell keys apart. */
  prefix: string;
  /** HMAC-SHA256(pepper, key), hex. */
  hash: string;
  /** JSON array of permission strings. */
  permissions: string;
  created_by: string | null;
  created_at: string;
  last_used_at: string | null;
  revoked_at: string | null;
  /** Calls made with the key are cached for this many seconds (null: only when a request asks). */
  cache_ttl_seconds?: number | null;
}

export interface ContainerTable {
  id: string;
  project_id: string;
  label: string;
  description: string | null;
  metadata: string;
  created_at: string;
  updated_at: string;
  /** 1: calls without another session rule join sessions by conversation continuity (the default). */
  session_continuity?: number;
}

export interface EvaluatorTable {
  id: string;
  project_id: string;
  container_id: string | null;
  type: EvaluatorType;
  name: string;
  description: string | null;
  metadata: string;
  pass_threshold: number | null;
  mode: string;
  api: string | null;
  model: string | null;
  prompt: string | null;
  inference_parameters: string;
  source: string | null;
  /** JSON array of requirement specifiers, or null. */
  requirements: string | null;
  /** The grader definition (OpenAI's shape, JSON) of evaluators of the grader types, else null. */
  grader: string | null;
  /** JSON scale reviewers score on (migration 025); null: derived from the evaluator's type. */
  scale: string | null;
  /** The catalog template (`name@version`) the evaluator was made from, until its prompt is edited. */
  template: string | null;
  created_at: string;
  updated_at: string;
}

export interface MetaTable {
  key: string;
  value: string;
  updated_at: string;
}

export interface RunTable {
  id: string;
  project_id: string;
  container_id: string;
  /** Written only by the run's transitions (src/engine/store/transitions.ts). */
  status: RunStatus;
  environment: string;
  /** JSON array of evaluator ids. */
  evaluators: string;
  /** JSON array of the dataset ids any side uses (for "dataset in use" checks). */
  dataset_ids: string;
  config: string;
  metadata: string | null;
  /** The run's optional name, given at creation or later (migration 015). */
  name: string | null;
  /**
   * JSON snapshot of everything execution needs: sides, launches, evaluator definitions. The sides are
   * stored here only (migration 018 dropped the side columns); the API's side views derive from them.
   */
  plan: string;
  results: string | null;
  metrics: string | null;
  spend: number | null;
  error: string | null;
  process_id: string | null;
  idempotency_key: string | null;
  request_hash: string | null;
  cancel_requested: number;
  created_at: string;
  started_at: string | null;
  finished_at: string | null;
  error_at: string | null;
  updated_at: string;
  /** Counters kept by atomic increments from every process executing the run (bigint: text on PostgreSQL). */
  done_positions: Generated<number | string>;
  total_positions: Generated<number | string>;
  judge_calls: Generated<number | string>;
  judge_prompt_tokens: Generated<number | string>;
  judge_completion_tokens: Generated<number | string>;
  judge_unpriced_calls: Generated<number | string>;
  judge_cost: Generated<number>;
  generation_calls: Generated<number | string>;
  generation_prompt_tokens: Generated<number | string>;
  generation_completion_tokens: Generated<number | string>;
  generation_unpriced_calls: Generated<number | string>;
  generation_cost: Generated<number>;
  /** JSON layout fixed when the run is prepared (positions, expected, offsets). */
  layout: Generated<string | null>;
  /** Set on a monitor's long-lived run: never finalized while the monitor lives, not listed as a run. */
  monitor_id: Generated<string | null>;
  /** JSON {code, message} once the run gave up waiting (rate limits): what is left is recorded as errors. */
  abandoned: Generated<string | null>;
  /** Unix ms of the last stored per-sample row. */
  progress_at: Generated<number | null>;
}

export interface RunLaunchTable {
  run_id: string;
  launch_index: number;
  model: string | null;
  /** The id of the job that executes the launch: fixed when the run is prepared, stable across restarts. */
  call_id: string;
}

export interface RunChunkTable {
  run_id: string;
  launch_index: number;
  chunk_index: number;
  from_position: number;
  to_position: number;
  environment: string;
  /** pending | done */
  status: string;
  owner: string | null;
  /** Unix ms; a pending chunk whose lease has expired may be taken by another worker. */
  lease_expires_at: number | null;
  attempts: number;
  updated_at: string;
}

export interface WorkerTable {
  id: string;
  /** JSON array of the environments the worker serves. */
  environments: string;
  executor: string;
  host: string;
  pid: number;
  concurrency: number;
  started_at: string;
  /** Unix ms of the worker's last heartbeat. */
  heartbeat_at: number;
}

export interface RunSampleTable {
  run_id: string;
  launch_index: number;
  evaluator_id: string;
  position: number;
  item_id: string | null;
  /** scored | error | missing */
  status: string;
  score: number | null;
  passed: number | null;
  reasoning: string | null;
  error: string | null;
  logs: string | null;
  input: string | null;
  output: string | null;
  expected: string | null;
  baseline: string | null;
  usage: string | null;
  cost: number;
  prompt_tokens: number;
  completion_tokens: number;
  /** Model calls made for this row (judge calls, retries included). */
  calls: number;
  /** Pairwise: 1 when the two orders disagreed beyond a tie. */
  inconsistent: number | null;
  latency_ms: number | null;
  extra: string | null;
  /** Why a `missing` sample was not scored (migration 021); null for the other statuses. */
  missing_reason: string | null;
  /** Hash of the exact judge prompt that scored the row (migration 025); null for other scorers. */
  prompt_hash?: string | null;
  created_at: string;
}

export interface RunGenerationTable {
  run_id: string;
  launch_index: number;
  side: string;
  position: number;
  model: string;
  output: string | null;
  error: string | null;
  usage: string | null;
  cost: number;
  prompt_tokens: number;
  completion_tokens: number;
  latency_ms: number | null;
  created_at: string;
}

export interface ResponseCacheTable {
  /** SHA-256 of project, resolved model and canonical request. */
  key: string;
  project_id: string;
  /** The cached answer (JSON). */
  entry: string;
  /** Epoch milliseconds. */
  expires_at: number;
  created_at: string;
}

export interface ModelTable {
  id: string;
  project_id: string;
  label: string;
  provider: 'openai-compatible' | 'anthropic' | 'gemini';
  base_url: string;
  upstream_model: string;
  /** AES-256-GCM ciphertext of the credential (see shared/crypto.ts), or null. */
  api_key_encrypted: string | null;
  api_key_last4: string | null;
  input_price_per_mtok: number | null;
  output_price_per_mtok: number | null;
  context_window: number | null;
  /** Requests / tokens per minute for evaluation-run calls to the model; null for no limit. */
  rpm_limit: number | null;
  tpm_limit: number | null;
  /** What the upstream speaks for generation: `chat` completions (default) or `responses`. */
  api: ModelApi;
  default_parameters: string;
  /** Calls to the model are cached for this many seconds (null: only when a request asks). */
  cache_ttl_seconds?: number | null;
  /** JSON array of model slugs. */
  fallbacks: string;
  metadata: string;
  created_at: string;
  updated_at: string;
}

export interface Database {
  organizations: OrganizationTable;
  projects: ProjectTable;
  api_keys: ApiKeyTable;
  budgets: BudgetTable;
  budget_spend: BudgetSpendTable;
  containers: ContainerTable;
  evaluators: EvaluatorTable;
  evalgate_meta: MetaTable;
  datasets: DatasetTable;
  dataset_items: DatasetItemTable;
  dataset_versions: DatasetVersionTable;
  models: ModelTable;
  response_cache: ResponseCacheTable;
  task_log_counters: TaskLogCounterTable;
  task_logs: TaskLogTable;
  runs: RunTable;
  monitors: MonitorTable;
  monitor_selections: MonitorSelectionTable;
  monitor_pending_sessions: MonitorPendingSessionTable;
  run_samples: RunSampleTable;
  evals: EvalTable;
  eval_runs: EvalRunTable;
  run_generations: RunGenerationTable;
  run_launches: RunLaunchTable;
  run_chunks: RunChunkTable;
  workers: WorkerTable;
  users: UserTable;
  sessions: SessionTable;
  memberships: MembershipTable;
  invitations: InvitationTable;
  invitation_links: InvitationLinkTable;
  password_accounts: PasswordAccountTable;
  sign_in_tokens: SignInTokenTable;
  oidc_logins: OidcLoginTable;
  task_sessions: TaskSessionTable;
  task_session_keys: TaskSessionKeyTable;
  spans: SpanTable;
  traces: TraceTable;
  span_log_events: SpanLogEventTable;
  annotation_queues: AnnotationQueueTable;
  annotation_items: AnnotationItemTable;
  annotation_assignments: AnnotationAssignmentTable;
  annotation_reviews: AnnotationReviewTable;
  annotation_settlements: AnnotationSettlementTable;
  run_conversation_calls: RunConversationCallTable;
  prompts: PromptTable;
  prompt_versions: PromptVersionTable;
  prompt_labels: PromptLabelTable;
  prompt_label_moves: PromptLabelMoveTable;
  guard_policies: GuardPolicyTable;
  guard_verdicts: GuardVerdictTable;
}
