import { type Kysely, sql } from 'kysely';
import type { Database } from '../db/schema.js';
import type { Budget, BudgetPeriod, BudgetScopeKind } from '../shared/budget.js';
import { nowIso } from '../shared/ids.js';

/** A stored budget, decoded. */
export interface BudgetRecord {
  scope: BudgetScopeKind;
  scopeId: string;
  budget: Budget;
}

/** One counter: a scope's spend in one period (`periodStart`: ISO-8601). */
export interface CounterKey {
  scope: BudgetScopeKind;
  scopeId: string;
  periodStart: string;
}

function decode(row: { scope: string; scope_id: string; limit_usd: number; period: string }): BudgetRecord {
  return {
    scope: row.scope === 'project' ? 'project' : 'key',
    scopeId: row.scope_id,
    budget: { limit_usd: Number(row.limit_usd), period: row.period as BudgetPeriod },
  };
}

/** Every budget of a project: its own and its keys'. */
export async function projectBudgets(db: Kysely<Database>, projectId: string): Promise<BudgetRecord[]> {
  const rows = await db
    .selectFrom('budgets')
    .select(['scope', 'scope_id', 'limit_usd', 'period'])
    .where('project_id', '=', projectId)
    .execute();
  return rows.map(decode);
}

export async function putBudget(
  db: Kysely<Database>,
  projectId: string,
  scope: BudgetScopeKind,
  scopeId: string,
  budget: Budget,
): Promise<void> {
  const now = nowIso();
  await db
    .insertInto('budgets')
    .values({
      scope,
      scope_id: scopeId,
      project_id: projectId,
      limit_usd: budget.limit_usd,
      period: budget.period,
      created_at: now,
      updated_at: now,
    })
    .onConflict((oc) =>
      oc.columns(['scope', 'scope_id']).doUpdateSet({
        limit_usd: budget.limit_usd,
        period: budget.period,
        updated_at: now,
      }),
    )
    .execute();
}

export async function deleteBudget(db: Kysely<Database>, scope: BudgetScopeKind, scopeId: string) {
  await db.deleteFrom('budgets').where('scope', '=', scope).where('scope_id', '=', scopeId).execute();
}

/** What a scope spent in a period, as stored (0 when nothing was). */
export async function storedSpend(db: Kysely<Database>, key: CounterKey): Promise<number> {
  const row = await db
    .selectFrom('budget_spend')
    .select('used_usd')
    .where('scope', '=', key.scope)
    .where('scope_id', '=', key.scopeId)
    .where('period_start', '=', key.periodStart)
    .executeTakeFirst();
  return row ? Number(row.used_usd) : 0;
}

/**
 * Adds to a scope's spend in a period, atomically on both dialects (one upsert); answers the spend after
 * the addition (what a reservation is checked against).
 */
export async function addSpend(db: Kysely<Database>, key: CounterKey, usd: number): Promise<number> {
  const now = nowIso();
  const row = await db
    .insertInto('budget_spend')
    .values({
      scope: key.scope,
      scope_id: key.scopeId,
      period_start: key.periodStart,
      used_usd: usd,
      updated_at: now,
    })
    .onConflict((oc) =>
      oc.columns(['scope', 'scope_id', 'period_start']).doUpdateSet({
        used_usd: sql<number>`budget_spend.used_usd + excluded.used_usd`,
        updated_at: now,
      }),
    )
    .returning('used_usd')
    .executeTakeFirst();
  return row ? Number(row.used_usd) : usd;
}
