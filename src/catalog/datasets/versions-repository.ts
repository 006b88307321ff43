import { type Kysely, PostgresAdapter, type SelectQueryBuilder, sql, type Transaction } from 'kysely';
import type { Database } from '../../db/schema.js';
import { ApiError } from '../../shared/errors.js';
import { nowIso } from '../../shared/ids.js';

/**
 * The versions of a dataset's items. A row of `dataset_items` is one version of one item, part of the
 * dataset's versions `valid_from` ≤ N < `valid_to` (null: still current). Rows are never rewritten but
 * for `valid_to`, set once when a later version replaces or removes the item: the rows of a committed
 * version never change, so a run reading version N in many chunks reads the same items whatever is
 * changed meanwhile. Version 1 is the upload: its rows are positions 0..count-1, read by position.
 */

type Db = Kysely<Database>;

/** One stored item version, as read back. */
export interface VersionRow {
  /** The row's slot (unique in the dataset). */
  row: number;
  /** 0-based place in the version read. */
  position: number;
  data: string;
  item_id: string | null;
  seq: number;
  splits: string[];
  origin: string | null;
  valid_from: number;
  valid_to: number | null;
}

const COLUMNS = ['position', 'data', 'item_id', 'seq', 'splits', 'origin', 'valid_from', 'valid_to'] as const;

type Selected = Pick<Database['dataset_items'], (typeof COLUMNS)[number]>;

function toRow(r: Selected, position: number): VersionRow {
  const splits = r.splits ? (JSON.parse(r.splits) as unknown) : [];
  return {
    row: Number(r.position),
    position,
    data: r.data,
    item_id: r.item_id ?? null,
    seq: Number(r.seq ?? r.position),
    splits: Array.isArray(splits) ? splits.filter((s): s is string => typeof s === 'string') : [],
    origin: r.origin ?? null,
    valid_from: Number(r.valid_from ?? 1),
    valid_to: r.valid_to === null || r.valid_to === undefined ? null : Number(r.valid_to),
  };
}

/** A LIKE pattern matching a JSON array of strings holding `name` (split names are plain: no quotes). */
function splitPattern(name: string): string {
  return `%${JSON.stringify(name).replace(/[\\%_]/g, (c) => `\\${c}`)}%`;
}

/** The rows of version `version` (and split), as a query to order and page. */
function versionQuery(db: Db, datasetId: string, version: number, split: string | null) {
  let q = db
    .selectFrom('dataset_items')
    .where('dataset_id', '=', datasetId)
    .where('valid_from', '<=', version)
    .where((eb) => eb.or([eb('valid_to', 'is', null), eb('valid_to', '>', version)]));
  if (split !== null) q = q.where(sql<boolean>`splits like ${splitPattern(split)} escape '\\'`);
  return q;
}

/** The rows at places [from, to) of a version (and split), in the dataset's order. */
export async function readVersion(
  db: Db,
  datasetId: string,
  version: number,
  window: { from: number; to: number; split?: string | null },
): Promise<VersionRow[]> {
  const { from, to } = window;
  const split = window.split ?? null;
  if (to <= from) return [];
  if (version === 1 && split === null) {
    // The upload's rows sit at positions 0..count-1 in order: the primary key's range.
    const rows = await db
      .selectFrom('dataset_items')
      .select(COLUMNS)
      .where('dataset_id', '=', datasetId)
      .where('position', '>=', from)
      .where('position', '<', to)
      .where('valid_from', '=', 1)
      .orderBy('position')
      .execute();
    return rows.map((r) => toRow(r, Number(r.position)));
  }
  const rows = await versionQuery(db, datasetId, version, split)
    .select(COLUMNS)
    .orderBy('seq')
    .limit(to - from)
    .offset(from)
    .execute();
  return rows.map((r, i) => toRow(r, from + i));
}

/** How many items a version (and split) holds. */
export async function countVersion(
  db: Db,
  datasetId: string,
  version: number,
  split: string | null = null,
): Promise<number> {
  if (split === null) {
    const row = await db
      .selectFrom('dataset_versions')
      .select('item_count')
      .where('dataset_id', '=', datasetId)
      .where('version', '=', version)
      .executeTakeFirst();
    if (row) return Number(row.item_count);
  }
  const row = await versionQuery(db, datasetId, version, split)
    .select((eb) => eb.fn.countAll<number | string>().as('n'))
    .executeTakeFirst();
  return Number(row?.n ?? 0);
}

function isPostgres(db: Db): boolean {
  return db.getExecutor().adapter instanceof PostgresAdapter;
}

/** An upload row's own `id` field as text, in SQL. */
function ownId(db: Db) {
  return isPostgres(db)
    ? sql<string>`(cast(data as jsonb) ->> 'id')`
    : sql<string>`cast(json_extract(data, '$.id') as text)`;
}

/**
 * The current row of the item `ref`: its stable id; for an upload's row, its own `id` field or
 * `<dataset>:<position>`. Two current rows answering to one id (an upload with a repeated `id`) are a
 * conflict: edit them by their `<dataset>:<position>`.
 */
export async function findCurrentItem(db: Db, datasetId: string, ref: string): Promise<VersionRow | null> {
  const current = (q: SelectQueryBuilder<Database, 'dataset_items', object>) =>
    q.where('dataset_id', '=', datasetId).where('valid_to', 'is', null);
  const byId = await current(db.selectFrom('dataset_items'))
    .select(COLUMNS)
    .where('item_id', '=', ref)
    .execute();
  if (byId.length > 0) return toRow(byId[0]!, 0);
  const prefix = `${datasetId}:`;
  const positional = ref.startsWith(prefix) ? ref.slice(prefix.length) : null;
  if (positional !== null && /^\d{1,15}$/.test(positional)) {
    const row = await current(db.selectFrom('dataset_items'))
      .select(COLUMNS)
      .where('position', '=', Number(positional))
      .where('item_id', 'is', null)
      .executeTakeFirst();
    if (row) return toRow(row, 0);
  }
  const own = await current(db.selectFrom('dataset_items'))
    .select(COLUMNS)
    .where('item_id', 'is', null)
    .where(sql<boolean>`${ownId(db)} = ${ref}`)
    .orderBy('position')
    .limit(2)
    .execute();
  if (own.length > 1) {
    throw new ApiError(
      'conflict',
      `Several items of the dataset have the id '${ref}'; name one by its <dataset id>:<position>`,
      { item: ref },
    );
  }
  return own[0] ? toRow(own[0], 0) : null;
}

/** A new item version to store. */
export interface NewVersionRow {
  item_id: string;
  data: string;
  splits: string[];
  origin: string | null;
  /** The place of the item it replaces; absent: a new item, after the others. */
  seq?: number;
}

/** One change: rows replaced or removed (their slots) and rows written. */
export interface Change {
  added: NewVersionRow[];
  edited: { row: number; next: NewVersionRow }[];
  removed: number[];
}

/** The version the change made and the rows it wrote (in the order given: added, then edited). */
export interface Applied {
  version: number;
  itemCount: number;
  createdAt: string;
  rows: VersionRow[];
}

/** The item changed or removed since it was read: the change is refused whole. */
function staleItem(): ApiError {
  return new ApiError(
    'conflict',
    'An item this change replaces was changed or removed by another change meanwhile; read it again and retry',
  );
}

async function bumpVersion(trx: Transaction<Database>, datasetId: string, delta: number, at: string) {
  // The update locks the dataset's row (PostgreSQL): changes to one dataset are applied one at a time.
  const row = await trx
    .updateTable('datasets')
    .set((eb) => ({
      version: eb('version', '+', 1),
      item_count: eb('item_count', '+', delta),
      updated_at: at,
    }))
    .where('id', '=', datasetId)
    .returning(['version', 'item_count'])
    .executeTakeFirst();
  if (!row) throw ApiError.notFound('Dataset', datasetId);
  return { version: Number(row.version), itemCount: Number(row.item_count) };
}

async function nextSlots(trx: Transaction<Database>, datasetId: string) {
  const row = await trx
    .selectFrom('dataset_items')
    .select((eb) => [
      eb.fn.max<number | string | null>('position').as('position'),
      eb.fn.max<number | string | null>('seq').as('seq'),
    ])
    .where('dataset_id', '=', datasetId)
    .executeTakeFirst();
  const position = row?.position === null || row?.position === undefined ? -1 : Number(row.position);
  const seq = row?.seq === null || row?.seq === undefined ? -1 : Number(row.seq);
  return { position: position + 1, seq: seq + 1 };
}

/** Applies a change as the dataset's next version, all or nothing. */
export async function applyChange(
  db: Db,
  datasetId: string,
  change: Change,
  createdBy: string | null,
): Promise<Applied> {
  const at = nowIso();
  const delta = change.added.length - change.removed.length;
  return db.transaction().execute(async (trx) => {
    const { version, itemCount } = await bumpVersion(trx, datasetId, delta, at);
    const ended = [...change.removed, ...change.edited.map((e) => e.row)];
    for (const row of ended) {
      const res = await trx
        .updateTable('dataset_items')
        .set({ valid_to: version })
        .where('dataset_id', '=', datasetId)
        .where('position', '=', row)
        .where('valid_to', 'is', null)
        .executeTakeFirst();
      if (Number(res.numUpdatedRows) !== 1) throw staleItem();
    }
    let { position, seq } = await nextSlots(trx, datasetId);
    const written = [...change.added, ...change.edited.map((e) => e.next)].map((r) => ({
      dataset_id: datasetId,
      position: position++,
      data: r.data,
      item_id: r.item_id,
      seq: r.seq ?? seq++,
      valid_from: version,
      valid_to: null,
      splits: r.splits.length > 0 ? JSON.stringify(r.splits) : null,
      origin: r.origin,
    }));
    for (let i = 0; i < written.length; i += 500) {
      await trx
        .insertInto('dataset_items')
        .values(written.slice(i, i + 500))
        .execute();
    }
    await trx
      .insertInto('dataset_versions')
      .values({
        dataset_id: datasetId,
        version,
        item_count: itemCount,
        added: change.added.length,
        changed: change.edited.length,
        removed: change.removed.length,
        created_by: createdBy,
        created_at: at,
      })
      .execute();
    return { version, itemCount, createdAt: at, rows: written.map((w) => toRow(w, 0)) };
  });
}

export type VersionRecord = Database['dataset_versions'];

export async function listVersions(
  db: Db,
  datasetId: string,
  page: { limit: number; offset: number },
): Promise<{ rows: VersionRecord[]; total: number }> {
  const [rows, count] = await Promise.all([
    db
      .selectFrom('dataset_versions')
      .selectAll()
      .where('dataset_id', '=', datasetId)
      .orderBy('version', 'desc')
      .limit(page.limit)
      .offset(page.offset)
      .execute(),
    db
      .selectFrom('dataset_versions')
      .select((eb) => eb.fn.countAll<number | string>().as('n'))
      .where('dataset_id', '=', datasetId)
      .executeTakeFirst(),
  ]);
  return { rows, total: Number(count?.n ?? 0) };
}

/**
 * The rows that differ between versions `from` < `to`: those of `to` that `from` has not (added or new
 * versions of changed items) and those of `from` that `to` has not (removed, or the old versions), at
 * most `limit` of each, in the dataset's order.
 */
export async function changedRows(
  db: Db,
  datasetId: string,
  from: number,
  to: number,
  limit: number,
): Promise<{ entered: VersionRow[]; left: VersionRow[] }> {
  const [entered, left] = await Promise.all([
    versionQuery(db, datasetId, to, null)
      .where('valid_from', '>', from)
      .select(COLUMNS)
      .orderBy('seq')
      .limit(limit)
      .execute(),
    versionQuery(db, datasetId, from, null)
      .where('valid_to', '<=', to)
      .select(COLUMNS)
      .orderBy('seq')
      .limit(limit)
      .execute(),
  ]);
  return { entered: entered.map((r) => toRow(r, 0)), left: left.map((r) => toRow(r, 0)) };
}
