/** The shapes the dashboard reads (the API's own, as the dashboard's endpoints return them). */

export interface Me {
  user: {
    id: string;
    name: string | null;
    email: string | null;
    email_verified: boolean;
    issuer: string;
    provider: string;
  };
  csrf_token: string;
  expires_at: string;
}

export interface ProjectRef {
  id: string;
  name: string;
  created_at: string;
}

export interface Organization {
  id: string;
  name: string;
  role: 'owner' | 'member';
  projects: ProjectRef[];
}

export interface Invitation {
  id: string;
  organization_id: string;
  organization: string;
  email: string;
  role: 'owner' | 'member';
  created_at: string;
  expires_at: string;
}

export interface OrganizationDetail {
  id: string;
  name: string;
  created_at: string;
  role: 'owner' | 'member';
  members: {
    user_id: string;
    name: string | null;
    email: string | null;
    issuer: string;
    role: string;
    created_at: string;
  }[];
  invitations: Invitation[];
  projects: ProjectRef[];
}

export interface Project {
  id: string;
  name: string;
  organization_id: string;
  organization: string;
  role: 'owner' | 'member';
}

export interface ApiKey {
  id: string;
  name: string;
  prefix: string;
  permissions: string[];
  created_at: string;
  last_used_at: string | null;
  revoked_at: string | null;
}

export interface Container {
  id: string;
  label: string;
  description: string | null;
  created_at: string;
}

export interface Evaluator {
  object: 'evaluator.judge' | 'evaluator.code';
  id: string;
  name: string;
  description: string;
  container: string | null;
  mode: string;
  pass_threshold: number | null;
  model?: string | null;
  prompt?: string | null;
  api?: string | null;
  inference_parameters?: Record<string, unknown>;
  source?: string | null;
  requirements?: string[] | null;
  updated_at: string;
}

export interface Dataset {
  id: string;
  label: string;
  description: string | null;
  item_count: number;
  created_at: string;
}

/** A model the project can use; `id` is its slug (a registered label or `<provider>/<name>`). */
export interface Model {
  id: string;
  kind: 'registered' | 'frontier';
  provider: string;
}

export interface PerEval {
  accuracy: number | null;
  avg_score: number | null;
  num_total: number | null;
  num_errors: number | null;
  num_failed: number | null;
  num_passed: number | null;
  num_scored: number | null;
  num_missing: number | null;
  stdev?: number | null;
  num_inconsistent?: number | null;
}

export interface Side {
  type: string;
  dataset?: string;
  container?: string;
  models?: string[];
  range: string;
}

export interface CallTotals {
  calls: number;
  prompt_tokens: number;
  completion_tokens: number;
  cost: number;
  unpriced_calls: number;
}

export interface Run {
  id: string;
  status: string;
  created_at: string;
  started_at: string | null;
  finished_at: string | null;
  error: { code: string; message: string } | null;
  evaluators: string[] | null;
  container: string | null;
  sample: Side | null;
  ground_truth: Side | null;
  baseline: Side | null;
  results: {
    overall: { avg_score: number | null; avg_accuracy: number | null } | null;
    per_model:
      | {
          model: { slug?: string } | null;
          launch_index: number | null;
          per_eval: Record<string, PerEval | null> | null;
        }[]
      | null;
  } | null;
  metrics: {
    progress?: { done: number; total: number | null };
    duration_ms?: number | null;
    judge?: CallTotals;
    generation?: CallTotals;
    queue?: { environment: string; live_workers: number; waiting_for_worker: boolean };
  } | null;
  spend: number | null;
  environment: string;
}

export interface RunDetail {
  run: Run;
  container_label: string | null;
  /** Labels of the datasets and containers the run's sides name by id. */
  labels: Record<string, string>;
  evaluators: { id: string; name: string; type: string; mode: string; pass_threshold: number | null }[];
  launches: { index: number; model: string | null }[];
}

export interface Sample {
  launch_index: number;
  evaluator_id: string;
  position: number;
  item_id: string | null;
  status: string;
  score: number | null;
  passed: boolean | null;
  reasoning: string | null;
  error: { code?: string; message?: string } | null;
  logs: string | null;
  input: unknown;
  output: unknown;
  expected: unknown;
  baseline: unknown;
  cost: number;
  latency_ms: number | null;
  extra: { verdicts?: string[]; inconsistent?: boolean } | null;
}

/** judge or code, from the evaluator's object type. */
export function evaluatorType(e: Pick<Evaluator, 'object'>): 'judge' | 'code' {
  return e.object === 'evaluator.code' ? 'code' : 'judge';
}

export const TERMINAL = ['completed', 'error', 'cancelled'];
