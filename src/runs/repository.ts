import type { Insertable, Kysely, Selectable } from 'kysely';
import { isUniqueViolation } from '../db/database.js';
import type { Database, RunSampleTable, RunTable } from '../db/schema.js';
import type { Page } from '../http/schemas.js';

export type RunRow = Selectable<RunTable> & { container_label: string | null };

function withLabel(db: Kysely<Database>) {
  return db
    .selectFrom('runs')
    .leftJoin('containers', 'containers.id', 'runs.container_id')
    .selectAll('runs')
    .select('containers.label as container_label');
}

/** Inserts a run; returns false when its idempotency key is already taken in the project. */
export async function insertRun(db: Kysely<Database>, row: Insertable<RunTable>): Promise<boolean> {
  try {
    await db.insertInto('runs').values(row).execute();
    return true;
  } catch (err) {
    if (isUniqueViolation(err) && row.idempotency_key !== null) return false;
    throw err;
  }
}

export async function findRun(
  db: Kysely<Database>,
  projectId: string,
  id: string,
): Promise<RunRow | undefined> {
  return withLabel(db).where('runs.project_id', '=', projectId).where('runs.id', '=', id).executeTakeFirst();
}

export async function findRunById(db: Kysely<Database>, id: string): Promise<RunRow | undefined> {
  return withLabel(db).where('runs.id', '=', id).executeTakeFirst();
}

export async function findRunByIdempotencyKey(
  db: Kysely<Database>,
  projectId: string,
  key: string,
): Promise<RunRow | undefined> {
  return withLabel(db)
    .where('runs.project_id', '=', projectId)
    .where('runs.idempotency_key', '=', key)
    .executeTakeFirst();
}

export async function listRuns(
  db: Kysely<Database>,
  projectId: string,
  filter: { containerId: string | null; status: string | null },
  page: Page,
): Promise<{ rows: RunRow[]; total: number }> {
  let rowsQ = withLabel(db).where('runs.project_id', '=', projectId);
  let countQ = db
    .selectFrom('runs')
    .select((eb) => eb.fn.countAll<number | string>().as('n'))
    .where('project_id', '=', projectId);
  if (filter.containerId !== null) {
    rowsQ = rowsQ.where('runs.container_id', '=', filter.containerId);
    countQ = countQ.where('container_id', '=', filter.containerId);
  }
  if (filter.status !== null) {
    rowsQ = rowsQ.where('runs.status', '=', filter.status);
    countQ = countQ.where('status', '=', filter.status);
  }
  const [rows, count] = await Promise.all([
    rowsQ
      .orderBy('runs.created_at', 'desc')
      .orderBy('runs.id', 'desc')
      .limit(page.limit)
      .offset(page.offset)
      .execute(),
    countQ.executeTakeFirstOrThrow(),
  ]);
  return { rows, total: Number(count.n) };
}

export async function listSamples(
  db: Kysely<Database>,
  runId: string,
  filter: { launch?: number; evaluatorId?: string; passed?: boolean; errored?: boolean; status?: string },
  page: Page,
): Promise<{ rows: Selectable<RunSampleTable>[]; total: number }> {
  let q = db.selectFrom('run_samples').where('run_id', '=', runId);
  if (filter.launch !== undefined) q = q.where('launch_index', '=', filter.launch);
  if (filter.evaluatorId !== undefined) q = q.where('evaluator_id', '=', filter.evaluatorId);
  if (filter.passed !== undefined) q = q.where('passed', '=', filter.passed ? 1 : 0);
  if (filter.errored !== undefined) q = q.where('status', filter.errored ? '=' : '<>', 'error');
  if (filter.status !== undefined) q = q.where('status', '=', filter.status);
  const [rows, count] = await Promise.all([
    q
      .selectAll()
      .orderBy('launch_index')
      .orderBy('position')
      .orderBy('evaluator_id')
      .limit(page.limit)
      .offset(page.offset)
      .execute(),
    q.select((eb) => eb.fn.countAll<number | string>().as('n')).executeTakeFirstOrThrow(),
  ]);
  return { rows, total: Number(count.n) };
}
