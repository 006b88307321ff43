import type { Kysely } from 'kysely';
import type { Database } from '../db/schema.js';
import type { EvaluatorSnapshot } from '../engine/plan.js';
import type { Payer } from '../shared/budget.js';
import type { ErrorBody } from '../shared/errors.js';
import type { TextGuard } from './builtins/types.js';
import type { EvaluatorGuardPorts } from './evaluator-guard.js';
import type { GuardCheck, VerdictKind } from './schemas.js';

/** The types the guards' runtime, its checks and the gateway's guard step share. */

/** One check ready to run: a compiled built-in, or the evaluator it names (looked up when compiled). */
export interface CompiledCheck {
  policyId: string;
  check: GuardCheck;
  guard: TextGuard | null;
  evaluator: EvaluatorSnapshot | null;
}

export interface GuardMetrics {
  guardVerdict(guard: string, stage: string, verdict: string): void;
}

export interface GuardRuntimePorts extends EvaluatorGuardPorts {
  db: Kysely<Database>;
  metrics?: GuardMetrics | undefined;
  /** How long a project's compiled policies are kept (ms). */
  cacheMs?: number;
  warn?(message: string): void;
}

/** One check's verdict on one call: kept as a score named after the check. */
export interface Verdict {
  policyId: string;
  guard: string;
  stage: GuardCheck['stage'];
  action: GuardCheck['action'];
  verdict: VerdictKind;
  score: number | null;
  passed: boolean | null;
  reason: string | null;
  error: ErrorBody | null;
  latencyMs: number;
}

/** What a check runs on: the text, the request's messages (an evaluator's input), who pays, when to stop. */
export interface CheckContext {
  ports: GuardRuntimePorts;
  payer: Payer;
  input: unknown;
  signal: AbortSignal;
}
