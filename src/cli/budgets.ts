import type { Command } from 'commander';
import { findKeyById } from '../auth/key-store.js';
import { createDatabaseCounter } from '../budgets/counter.js';
import { Budgets } from '../budgets/service.js';
import type { DatabaseHandle } from '../db/database.js';
import { BUDGET_PERIODS, type Budget, type BudgetPeriod, type BudgetState } from '../shared/budget.js';
import { findProject } from '../tenancy/projects.js';
import { configFrom, withDatabase } from './context.js';

const SPEC = '<usd>[/day|/month|/total], e.g. 5/day (the period defaults to month), or none';

/** `5/day` → a budget; `none` → null. */
export function parseBudget(spec: string): Budget | null {
  if (spec.trim().toLowerCase() === 'none') return null;
  const [amount = '', period = 'month'] = spec.trim().replace(/^\$/, '').split('/');
  const limit = Number(amount);
  if (amount === '' || !Number.isFinite(limit) || limit < 0) {
    throw new Error(`budget '${spec}': the amount must be a number of USD >= 0 (${SPEC})`);
  }
  if (!(BUDGET_PERIODS as readonly string[]).includes(period)) {
    throw new Error(`budget '${spec}': the period must be one of ${BUDGET_PERIODS.join(', ')}`);
  }
  return { limit_usd: limit, period: period as BudgetPeriod };
}

/** One line: `5 USD per day, 1.25 spent since …, resets …`, or `no budget`. */
export function describeBudget(state: BudgetState): string {
  const { budget, spend } = state;
  if (!budget || !spend) return 'no budget';
  const per = budget.period === 'total' ? 'in total' : `per ${budget.period}`;
  const resets = spend.resets_at ? `, resets ${spend.resets_at}` : '';
  return `${budget.limit_usd} USD ${per}, ${spend.used_usd} spent since ${spend.period_start}${resets}`;
}

/** The budgets as an admin command sees them: read from and written to the database. */
export function budgetsOf(database: DatabaseHandle): Budgets {
  const counter = createDatabaseCounter({ db: database.db, warn: () => {} });
  return new Budgets({ db: database.db, counter, cacheMs: 0 });
}

/** `evalgate keys budget` and `evalgate projects budget`: show or set a key's or a project's budget. */
export function registerBudgetCommands(keys: Command, projects: Command): void {
  keys
    .command('budget <keyId> [budget]')
    .description(`show or set (${SPEC}) an API key's budget`)
    .action(async (keyId: string, spec: string | undefined, _opts: unknown, command: Command) => {
      const budget = spec === undefined ? undefined : parseBudget(spec);
      await withDatabase(configFrom(command), async (database) => {
        const key = await findKeyById(database.db, keyId);
        if (!key) throw new Error(`API key '${keyId}' not found`);
        const budgets = budgetsOf(database);
        const state =
          budget === undefined
            ? await budgets.get(key.project_id, 'key', key.id)
            : await budgets.set(key.project_id, 'key', key.id, budget);
        process.stdout.write(`${key.id} (${key.name}): ${describeBudget(state)}\n`);
      });
    });
  projects
    .command('budget <name> [budget]')
    .description(`show or set (${SPEC}) a project's budget`)
    .action(async (name: string, spec: string | undefined, _opts: unknown, command: Command) => {
      const budget = spec === undefined ? undefined : parseBudget(spec);
      await withDatabase(configFrom(command), async (database) => {
        const project = await findProject(database.db, name);
        if (!project) throw new Error(`project '${name}' not found`);
        const budgets = budgetsOf(database);
        const state =
          budget === undefined
            ? await budgets.get(project.id, 'project', project.id)
            : await budgets.set(project.id, 'project', project.id, budget);
        process.stdout.write(`${project.name}: ${describeBudget(state)}\n`);
      });
    });
}
