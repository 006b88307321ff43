/**
 * Spend limits as every folder names them: a budget on an API key or a project, the spend of its current
 * period, and the two ports through which the gateway and the run engine keep to them (implemented in
 * `budgets/`, handed over by the composition root).
 */

export const BUDGET_PERIODS = ['day', 'month', 'total'] as const;
/** `day` and `month` are calendar periods in UTC; `total` never resets. */
export type BudgetPeriod = (typeof BUDGET_PERIODS)[number];

/** A bound on what a key or a project may spend per period, in USD. */
export interface Budget {
  limit_usd: number;
  period: BudgetPeriod;
}

/** The spend of a budget's current period. */
export interface Spend {
  /** ISO-8601; the start of the period (for `total`, the Unix epoch). */
  period_start: string;
  used_usd: number;
  limit_usd: number;
  /** ISO-8601; when the period ends and the spend starts again from zero; null for `total`. */
  resets_at: string | null;
}

export type BudgetScopeKind = 'key' | 'project';

/** Who pays for a model call: the project, and the API key when the call came through one. */
export interface Payer {
  projectId: string;
  keyId: string | null;
}

/**
 * What every model call goes through: `check` before the upstream call refuses once the key's or the
 * project's spend has reached its limit (`ApiError` `budget_exceeded`, 429 with `Retry-After` until the
 * period resets); `charge` adds the call's actual cost afterwards. It never throws; what it returns
 * (when anything) settles once every process checking the same budget sees the cost, so a caller that
 * awaits it before answering lets no next call slip past the limit.
 */
export interface SpendGuard {
  check(payer: Payer): Promise<void>;
  charge(payer: Payer, usd: number): Promise<void> | undefined;
  /**
   * `check` and a reservation in one step: the call's largest cost is counted at once (so that calls in
   * flight together see each other), and refused like `check` when the spend before it, reservations
   * included, has reached a limit. The caller settles it to the actual cost once the call is done (0
   * when nothing was paid).
   */
  reserve(payer: Payer, usd: number): Promise<Reservation>;
}

/** A call's reserved cost: `settle` replaces it with what the call cost (once; it never throws). */
export interface Reservation {
  settle(actualUsd: number): Promise<void> | undefined;
}

/** A scope's budget and the spend of its current period (null when it has no budget). */
export interface BudgetState {
  budget: Budget | null;
  spend: Spend | null;
}

/** What the key and project routes need to show and set budgets. */
export interface BudgetAdmin {
  /** The budget and spend of each of the project's keys named (keys without a budget are absent). */
  keys(projectId: string, keyIds: readonly string[]): Promise<Map<string, BudgetState>>;
  get(projectId: string, kind: BudgetScopeKind, id: string): Promise<BudgetState>;
  /** Sets (or, with null, removes) a budget; the caller has checked that the scope is the project's. */
  set(projectId: string, kind: BudgetScopeKind, id: string, budget: Budget | null): Promise<BudgetState>;
}
