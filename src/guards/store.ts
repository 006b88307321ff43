import type { Kysely, Selectable } from 'kysely';
import { isUniqueViolation } from '../db/database.js';
import type { Page } from '../db/paging.js';
import type { Database } from '../db/schema.js';
import type { GuardPolicyTable, GuardVerdictTable } from '../db/schema-guards.js';
import { policyNameTaken } from './errors.js';

/** The SQL of guards: policies and the verdicts their checks gave. */
export type PolicyRow = Selectable<GuardPolicyTable>;
export type VerdictRow = Selectable<GuardVerdictTable>;

export async function insertPolicy(db: Kysely<Database>, row: GuardPolicyTable): Promise<void> {
  try {
    await db.insertInto('guard_policies').values(row).execute();
  } catch (err) {
    if (isUniqueViolation(err)) throw policyNameTaken(row.name);
    throw err;
  }
}

/** A policy of the project by id (`grd_…`) or name. */
export function findPolicy(
  db: Kysely<Database>,
  projectId: string,
  ref: string,
): Promise<PolicyRow | undefined> {
  return db
    .selectFrom('guard_policies')
    .selectAll()
    .where('project_id', '=', projectId)
    .where(ref.startsWith('grd_') ? 'id' : 'name', '=', ref)
    .executeTakeFirst();
}

export async function listPolicies(
  db: Kysely<Database>,
  projectId: string,
  page: Page,
): Promise<{ rows: PolicyRow[]; total: number }> {
  const base = db.selectFrom('guard_policies').where('project_id', '=', projectId);
  const [rows, count] = await Promise.all([
    base
      .selectAll()
      .orderBy('created_at', 'asc')
      .orderBy('id', 'asc')
      .limit(page.limit)
      .offset(page.offset)
      .execute(),
    base.select((eb) => eb.fn.countAll<number | string>().as('n')).executeTakeFirstOrThrow(),
  ]);
  return { rows, total: Number(count.n) };
}

/** The enabled policies of a project, in order of creation: what the gateway applies. */
export function enabledPolicies(db: Kysely<Database>, projectId: string): Promise<PolicyRow[]> {
  return db
    .selectFrom('guard_policies')
    .selectAll()
    .where('project_id', '=', projectId)
    .where('enabled', '=', 1)
    .orderBy('created_at', 'asc')
    .orderBy('id', 'asc')
    .execute();
}

export async function updatePolicy(
  db: Kysely<Database>,
  id: string,
  patch: Partial<Omit<GuardPolicyTable, 'id' | 'project_id' | 'created_at'>>,
): Promise<void> {
  try {
    await db.updateTable('guard_policies').set(patch).where('id', '=', id).execute();
  } catch (err) {
    if (isUniqueViolation(err) && patch.name !== undefined) throw policyNameTaken(patch.name);
    throw err;
  }
}

export async function deletePolicy(db: Kysely<Database>, id: string): Promise<void> {
  await db.deleteFrom('guard_policies').where('id', '=', id).execute();
}

export async function insertVerdicts(db: Kysely<Database>, rows: GuardVerdictTable[]): Promise<void> {
  if (rows.length === 0) return;
  await db.insertInto('guard_verdicts').values(rows).execute();
}

export interface VerdictFilter {
  taskLogId?: string | undefined;
  guard?: string | undefined;
  verdict?: string | undefined;
}

export async function listVerdicts(
  db: Kysely<Database>,
  projectId: string,
  filter: VerdictFilter,
  page: Page,
): Promise<{ rows: VerdictRow[]; total: number }> {
  let base = db.selectFrom('guard_verdicts').where('project_id', '=', projectId);
  if (filter.taskLogId !== undefined) base = base.where('task_log_id', '=', filter.taskLogId);
  if (filter.guard !== undefined) base = base.where('guard', '=', filter.guard);
  if (filter.verdict !== undefined) base = base.where('verdict', '=', filter.verdict);
  const [rows, count] = await Promise.all([
    base
      .selectAll()
      .orderBy('created_at', 'desc')
      .orderBy('id', 'desc')
      .limit(page.limit)
      .offset(page.offset)
      .execute(),
    base.select((eb) => eb.fn.countAll<number | string>().as('n')).executeTakeFirstOrThrow(),
  ]);
  return { rows, total: Number(count.n) };
}
