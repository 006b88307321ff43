import { type Kysely, sql } from 'kysely';
import { isUniqueViolation } from '../../db/database.js';
import { listProjectRows } from '../../db/paging.js';
import type { Database } from '../../db/schema.js';
import type { DatasetTable } from '../../db/schema-datasets.js';
import type { Page } from '../../http/schemas.js';
import { ApiError } from '../../shared/errors.js';
import { batches } from '../json-lines.js';

export type DatasetRow = DatasetTable;

// 3 parameters per row stays far below SQLite's 32766 and PostgreSQL's 65535; the character bound keeps a
// batch of large rows small in memory.
const BATCH_ROWS = 2000;
const BATCH_CHARS = 8 * 1024 * 1024;

function labelTaken(label: string): ApiError {
  return new ApiError('conflict', `A dataset labelled '${label}' already exists in this project`, { label });
}

export async function labelExists(db: Kysely<Database>, projectId: string, label: string): Promise<boolean> {
  const row = await db
    .selectFrom('datasets')
    .select('id')
    .where('project_id', '=', projectId)
    .where('label', '=', label)
    .executeTakeFirst();
  return row !== undefined;
}

/**
 * The dataset and all its rows (JSON text, in order) in one transaction: all or nothing. `row.item_count`
 * must already be the number of rows.
 */
export async function insertDataset(
  db: Kysely<Database>,
  row: DatasetRow,
  items: AsyncIterable<string> | Iterable<string>,
): Promise<void> {
  try {
    await db.transaction().execute(async (trx) => {
      await trx.insertInto('datasets').values(row).execute();
      let position = 0;
      for await (const batch of batches(items, BATCH_ROWS, BATCH_CHARS)) {
        await trx
          .insertInto('dataset_items')
          .values(batch.map((data) => ({ dataset_id: row.id, position, seq: position++, data })))
          .execute();
      }
      if (position !== row.item_count)
        throw new Error(`dataset ${row.id}: ${position} rows, expected ${row.item_count}`);
      await trx
        .insertInto('dataset_versions')
        .values({
          dataset_id: row.id,
          version: 1,
          item_count: position,
          added: position,
          changed: 0,
          removed: 0,
          created_by: null,
          created_at: row.created_at,
        })
        .execute();
    });
  } catch (err) {
    if (isUniqueViolation(err)) throw labelTaken(row.label);
    throw err;
  }
}

/** A dataset of the project by id or label. */
export async function findDataset(
  db: Kysely<Database>,
  projectId: string,
  ref: string,
): Promise<DatasetRow | undefined> {
  return db
    .selectFrom('datasets')
    .selectAll()
    .where('project_id', '=', projectId)
    .where((eb) => (ref.startsWith('ds_') ? eb('id', '=', ref) : eb('label', '=', ref)))
    .executeTakeFirst();
}

export async function listDatasets(
  db: Kysely<Database>,
  projectId: string,
  page: Page,
): Promise<{ rows: DatasetRow[]; total: number }> {
  return listProjectRows(db, 'datasets', projectId, page);
}

export async function updateDataset(
  db: Kysely<Database>,
  id: string,
  patch: Partial<Pick<DatasetRow, 'label' | 'description' | 'metadata' | 'updated_at'>>,
): Promise<void> {
  try {
    await db.updateTable('datasets').set(patch).where('id', '=', id).execute();
  } catch (err) {
    if (isUniqueViolation(err)) throw labelTaken(patch.label ?? '');
    throw err;
  }
}

export async function deleteDataset(db: Kysely<Database>, id: string): Promise<void> {
  await db.transaction().execute(async (trx) => {
    await trx.deleteFrom('dataset_items').where('dataset_id', '=', id).execute();
    await trx.deleteFrom('dataset_versions').where('dataset_id', '=', id).execute();
    await trx.deleteFrom('datasets').where('id', '=', id).execute();
  });
}

/** Rows at positions [from, to), in order: the upload's (version 1's) rows. */
export async function readItemRows(
  db: Kysely<Database>,
  datasetId: string,
  from: number,
  to: number,
): Promise<{ position: number; data: string }[]> {
  if (to <= from) return [];
  const rows = await db
    .selectFrom('dataset_items')
    .select(['position', 'data'])
    .where('dataset_id', '=', datasetId)
    .where('position', '>=', from)
    .where('position', '<', to)
    .where('valid_from', '=', 1)
    .orderBy('position')
    .execute();
  return rows.map((r) => ({ position: Number(r.position), data: r.data }));
}

export async function itemCount(db: Kysely<Database>, datasetId: string): Promise<number> {
  const row = await db
    .selectFrom('datasets')
    .select('item_count')
    .where('id', '=', datasetId)
    .executeTakeFirst();
  return row ? Number(row.item_count) : 0;
}

function isMissingTable(err: unknown): boolean {
  const code = (err as { code?: unknown } | null)?.code;
  const message = err instanceof Error ? err.message : '';
  return code === '42P01' || /no such table/i.test(message);
}

/**
 * True while a queued or running evaluation run draws from the dataset (`runs.dataset_ids` is a JSON
 * array of ids). False when the runs table does not exist (an older schema).
 */
export async function datasetInUse(db: Kysely<Database>, datasetId: string): Promise<boolean> {
  const pattern = `%${JSON.stringify(datasetId).replace(/[\\%_]/g, (c) => `\\${c}`)}%`;
  try {
    const row = await db
      .selectFrom('runs')
      .select('id')
      .where(sql<boolean>`dataset_ids like ${pattern} escape '\\'`)
      .where('status', 'in', ['queued', 'running'])
      .limit(1)
      .executeTakeFirst();
    return row !== undefined;
  } catch (err) {
    if (isMissingTable(err)) return false;
    throw err;
  }
}
