/** Guards (migration 037): a project's guard policies and the verdicts their checks gave on calls. */
export interface GuardPolicyTable {
  id: string;
  project_id: string;
  name: string;
  description: string | null;
  /** 1 when the gateway applies the policy. */
  enabled: number;
  /** JSON `{containers, keys, models}`: ids of containers and keys, model names; all empty: every call. */
  applies_to: string;
  /** JSON array of the policy's checks, in order. */
  checks: string;
  created_at: string;
  updated_at: string;
}

export interface GuardVerdictTable {
  id: string;
  project_id: string;
  /** The call's task log (null when the call was not recorded). */
  task_log_id: string | null;
  policy_id: string;
  /** The check's name within its policy: the score's name. */
  guard: string;
  /** input | output | parallel */
  stage: string;
  /** block | flag | redact */
  action: string;
  /** passed | blocked | flagged | redacted | error */
  verdict: string;
  /** 1: the check found nothing; 0: it triggered (prompt injection: 1 - its score). */
  score: number | null;
  passed: number | null;
  reason: string | null;
  /** JSON `{code, message}` of a check that timed out or failed (see `verdict` for how it ended). */
  error: string | null;
  latency_ms: number;
  created_at: string;
}
