import type { Kysely } from 'kysely';
import { isForeignKeyViolation, isUniqueViolation } from '../../db/database.js';
import { listProjectRows } from '../../db/paging.js';
import type { ContainerTable, Database } from '../../db/schema.js';
import type { Page } from '../../http/schemas.js';
import { ApiError } from '../../shared/errors.js';

export type ContainerRow = ContainerTable;

function labelTaken(label: string): ApiError {
  return new ApiError('conflict', `A container labelled '${label}' already exists in this project`, {
    label,
  });
}

export async function insertContainer(db: Kysely<Database>, row: ContainerRow): Promise<void> {
  try {
    await db.insertInto('containers').values(row).execute();
  } catch (err) {
    if (isUniqueViolation(err)) throw labelTaken(row.label);
    throw err;
  }
}

/** A container of the project by id or label. */
export async function findContainer(
  db: Kysely<Database>,
  projectId: string,
  ref: string,
): Promise<ContainerRow | undefined> {
  return db
    .selectFrom('containers')
    .selectAll()
    .where('project_id', '=', projectId)
    .where((eb) => (ref.startsWith('ctr_') ? eb('id', '=', ref) : eb('label', '=', ref)))
    .executeTakeFirst();
}

export async function listContainers(
  db: Kysely<Database>,
  projectId: string,
  page: Page,
): Promise<{ rows: ContainerRow[]; total: number }> {
  return listProjectRows(db, 'containers', projectId, page);
}

export async function updateContainer(
  db: Kysely<Database>,
  id: string,
  patch: Partial<
    Pick<ContainerRow, 'label' | 'description' | 'metadata' | 'updated_at' | 'session_continuity'>
  >,
): Promise<void> {
  try {
    await db.updateTable('containers').set(patch).where('id', '=', id).execute();
  } catch (err) {
    if (isUniqueViolation(err)) throw labelTaken(patch.label ?? '');
    throw err;
  }
}

/** How many evaluators and runs still reference the container. */
export async function containerReferences(
  db: Kysely<Database>,
  id: string,
): Promise<{ evaluators: number; runs: number }> {
  const [evaluators, runs] = await Promise.all([
    db
      .selectFrom('evaluators')
      .select((eb) => eb.fn.countAll<number | string>().as('n'))
      .where('container_id', '=', id)
      .executeTakeFirstOrThrow(),
    db
      .selectFrom('runs')
      .select((eb) => eb.fn.countAll<number | string>().as('n'))
      .where('container_id', '=', id)
      .executeTakeFirstOrThrow(),
  ]);
  return { evaluators: Number(evaluators.n), runs: Number(runs.n) };
}

/** Deletes the container; a reference that appeared since the caller's check answers 409. */
export async function deleteContainer(db: Kysely<Database>, id: string): Promise<void> {
  try {
    await db.deleteFrom('containers').where('id', '=', id).execute();
  } catch (err) {
    if (isForeignKeyViolation(err))
      throw new ApiError('container_in_use', 'The container is still referenced');
    throw err;
  }
}

/** The label of each of these containers; deleted ones are absent. */
export async function labelsOf(db: Kysely<Database>, ids: readonly string[]): Promise<Map<string, string>> {
  if (ids.length === 0) return new Map();
  const rows = await db
    .selectFrom('containers')
    .select(['id', 'label'])
    .where('id', 'in', [...ids])
    .execute();
  return new Map(rows.map((r) => [r.id, r.label]));
}
