/** Spend limits: one budget per API key or project, and the spend of each of their periods. */
export interface BudgetTable {
  /** `key` or `project`. */
  scope: string;
  /** The key's or the project's id. */
  scope_id: string;
  project_id: string;
  limit_usd: number;
  /** `day`, `month` or `total`. */
  period: string;
  created_at: string;
  updated_at: string;
}

export interface BudgetSpendTable {
  scope: string;
  scope_id: string;
  /** ISO-8601 start of the period (the Unix epoch for `total`). */
  period_start: string;
  used_usd: number;
  updated_at: string;
}
