import type { Kysely, Selectable } from 'kysely';
import { isUniqueViolation } from '../db/database.js';
import type { Database, EvaluatorTable } from '../db/schema.js';
import type { Page } from '../http/schemas.js';
import { ApiError } from '../shared/errors.js';

export type EvaluatorRow = Selectable<EvaluatorTable> & { container_label: string | null };

function nameTaken(name: string): ApiError {
  return new ApiError('conflict', `An evaluator named '${name}' already exists in this project`, { name });
}

function withLabel(db: Kysely<Database>) {
  return db
    .selectFrom('evaluators')
    .leftJoin('containers', 'containers.id', 'evaluators.container_id')
    .selectAll('evaluators')
    .select('containers.label as container_label');
}

export async function insertEvaluator(db: Kysely<Database>, row: EvaluatorTable): Promise<void> {
  try {
    await db.insertInto('evaluators').values(row).execute();
  } catch (err) {
    if (isUniqueViolation(err)) throw nameTaken(row.name);
    throw err;
  }
}

/** An evaluator of the project by id or name. */
export async function findEvaluator(
  db: Kysely<Database>,
  projectId: string,
  ref: string,
): Promise<EvaluatorRow | undefined> {
  return withLabel(db)
    .where('evaluators.project_id', '=', projectId)
    .where((eb) => (ref.startsWith('evl_') ? eb('evaluators.id', '=', ref) : eb('evaluators.name', '=', ref)))
    .executeTakeFirst();
}

export async function listEvaluators(
  db: Kysely<Database>,
  projectId: string,
  containerId: string | null,
  page: Page,
  projectWide = false,
): Promise<{ rows: EvaluatorRow[]; total: number }> {
  let rowsQ = withLabel(db).where('evaluators.project_id', '=', projectId);
  let countQ = db
    .selectFrom('evaluators')
    .select((eb) => eb.fn.countAll<number | string>().as('n'))
    .where('project_id', '=', projectId);
  if (containerId !== null && projectWide) {
    rowsQ = rowsQ.where((eb) =>
      eb.or([eb('evaluators.container_id', '=', containerId), eb('evaluators.container_id', 'is', null)]),
    );
    countQ = countQ.where((eb) =>
      eb.or([eb('container_id', '=', containerId), eb('container_id', 'is', null)]),
    );
  } else if (containerId !== null) {
    rowsQ = rowsQ.where('evaluators.container_id', '=', containerId);
    countQ = countQ.where('container_id', '=', containerId);
  }
  const [rows, count] = await Promise.all([
    rowsQ
      .orderBy('evaluators.created_at', 'desc')
      .orderBy('evaluators.id', 'desc')
      .limit(page.limit)
      .offset(page.offset)
      .execute(),
    countQ.executeTakeFirstOrThrow(),
  ]);
  return { rows, total: Number(count.n) };
}

export async function updateEvaluator(
  db: Kysely<Database>,
  id: string,
  patch: Partial<EvaluatorTable>,
): Promise<void> {
  try {
    await db.updateTable('evaluators').set(patch).where('id', '=', id).execute();
  } catch (err) {
    if (isUniqueViolation(err)) throw nameTaken(patch.name ?? '');
    throw err;
  }
}

export async function deleteEvaluator(db: Kysely<Database>, id: string): Promise<void> {
  await db.deleteFrom('evaluators').where('id', '=', id).execute();
}

/** The type of each of these evaluators (judge, code or a grader type); deleted ones are absent. */
export async function typesOf(db: Kysely<Database>, ids: readonly string[]): Promise<Map<string, string>> {
  if (ids.length === 0) return new Map();
  const rows = await db
    .selectFrom('evaluators')
    .select(['id', 'type'])
    .where('id', 'in', [...ids])
    .execute();
  return new Map(rows.map((r) => [r.id, r.type as string]));
}
