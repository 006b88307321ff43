import type { Kysely } from 'kysely';
import { isUniqueViolation } from '../../db/database.js';
import type { Database, ModelTable } from '../../db/schema.js';
import { ApiError } from '../../shared/errors.js';

export type ModelRow = ModelTable;

function labelTaken(label: string): ApiError {
  return new ApiError('conflict', `A model labelled '${label}' already exists in this project`, { label });
}

export async function insertModel(db: Kysely<Database>, row: ModelRow): Promise<void> {
  try {
    await db.insertInto('models').values(row).execute();
  } catch (err) {
    if (isUniqueViolation(err)) throw labelTaken(row.label);
    throw err;
  }
}

/** A registered model of the project by id or label. */
export async function findModel(
  db: Kysely<Database>,
  projectId: string,
  ref: string,
): Promise<ModelRow | undefined> {
  return db
    .selectFrom('models')
    .selectAll()
    .where('project_id', '=', projectId)
    .where((eb) => (ref.startsWith('mdl_') ? eb('id', '=', ref) : eb('label', '=', ref)))
    .executeTakeFirst();
}

/** Every registered model of the project, oldest first (a project registers tens, not millions). */
export async function listModels(db: Kysely<Database>, projectId: string): Promise<ModelRow[]> {
  return db
    .selectFrom('models')
    .selectAll()
    .where('project_id', '=', projectId)
    .orderBy('created_at')
    .orderBy('id')
    .execute();
}

export async function updateModel(
  db: Kysely<Database>,
  id: string,
  patch: Partial<Omit<ModelRow, 'id' | 'project_id' | 'created_at'>>,
): Promise<void> {
  try {
    await db.updateTable('models').set(patch).where('id', '=', id).execute();
  } catch (err) {
    if (isUniqueViolation(err)) throw labelTaken(patch.label ?? '');
    throw err;
  }
}

export async function deleteModel(db: Kysely<Database>, id: string): Promise<void> {
  await db.deleteFrom('models').where('id', '=', id).execute();
}
