import type { Kysely } from 'kysely';
import type { Database } from '../../db/schema.js';
import type { ListResponse, Page } from '../../http/schemas.js';
import { ApiError } from '../../shared/errors.js';
import { type JsonObject, parseJson } from '../../shared/json.js';
import { pageWindow, parseRange } from '../range.js';
import { rowItemId } from './items.js';
import type { DatasetRow } from './repository.js';
import type { DatasetItem } from './schemas.js';
import { requireDataset } from './service.js';
import type { DatasetDiff, DatasetVersion } from './version-schemas.js';
import * as versions from './versions-repository.js';

type Db = Kysely<Database>;

/** The version asked for (the latest when none is), or 404 naming the versions there are. */
export function requireVersion(dataset: DatasetRow, version: number | undefined, loc: string[]): number {
  const latest = Number(dataset.version ?? 1);
  if (version === undefined) return latest;
  if (version > latest) {
    throw new ApiError(
      'not_found',
      `Dataset '${dataset.label}' has no version ${version}: its versions are 1 to ${latest}`,
      { resource: 'dataset_version', ref: `${dataset.id}@${version}`, loc, latest },
    );
  }
  return version;
}

/** A stored item version as the API shows it, at `position` in the version read. */
export function itemView(datasetId: string, row: versions.VersionRow): DatasetItem {
  const data = parseJson<JsonObject>(row.data, {});
  const item: DatasetItem = {
    object: 'dataset.item',
    position: row.position,
    id: rowItemId(datasetId, row, data),
    data,
  };
  if (row.splits.length > 0) item.splits = row.splits;
  if (row.origin !== null) item.origin = parseJson<JsonObject>(row.origin, {});
  return item;
}

export async function listItems(
  db: Db,
  projectId: string,
  ref: string,
  query: { range?: string; version?: number; split?: string },
  page: Page,
): Promise<ListResponse<DatasetItem>> {
  const dataset = await requireDataset(db, projectId, ref);
  const version = requireVersion(dataset, query.version, ['query', 'version']);
  const split = query.split ?? null;
  const count = await versions.countVersion(db, dataset.id, version, split);
  const range = query.range === undefined ? null : parseRange(query.range, ['query', 'range']);
  const { from, to, total } = pageWindow(range, page, count);
  const rows = await versions.readVersion(db, dataset.id, version, { from, to, split });
  return { object: 'list', data: rows.map((r) => itemView(dataset.id, r)), total };
}

function toVersion(r: versions.VersionRecord): DatasetVersion {
  return {
    object: 'dataset.version',
    dataset_id: r.dataset_id,
    version: Number(r.version),
    item_count: Number(r.item_count),
    added: Number(r.added),
    changed: Number(r.changed),
    removed: Number(r.removed),
    created_by: r.created_by,
    created_at: r.created_at,
  };
}

export async function listVersions(
  db: Db,
  projectId: string,
  ref: string,
  page: Page,
): Promise<ListResponse<DatasetVersion>> {
  const dataset = await requireDataset(db, projectId, ref);
  const { rows, total } = await versions.listVersions(db, dataset.id, page);
  return { object: 'list', data: rows.map(toVersion), total };
}

/**
 * What differs between two versions: items added, removed, and changed (before and after), in the
 * dataset's order; an item's `position` in a diff is 0 (it names no place in either version).
 */
export async function diffVersions(
  db: Db,
  projectId: string,
  ref: string,
  query: { from: number; to?: number; limit?: number },
): Promise<DatasetDiff> {
  const dataset = await requireDataset(db, projectId, ref);
  const from = requireVersion(dataset, query.from, ['query', 'from']);
  const to = requireVersion(dataset, query.to, ['query', 'to']);
  if (to < from) {
    throw ApiError.invalid(
      ['query', 'to'],
      `to (${to}) must not be before from (${from})`,
      'greater_than_equal',
    );
  }
  const limit = query.limit ?? 1000;
  const { entered, left } = await versions.changedRows(db, dataset.id, from, to, limit + 1);
  const truncated = entered.length > limit || left.length > limit;
  const after = entered.slice(0, limit).map((r) => itemView(dataset.id, r));
  const before = left.slice(0, limit).map((r) => itemView(dataset.id, r));
  const beforeById = new Map(before.map((item) => [item.id, item]));
  const afterIds = new Set(after.map((item) => item.id));
  return {
    object: 'dataset.diff',
    dataset_id: dataset.id,
    from_version: from,
    to_version: to,
    added: after.filter((item) => !beforeById.has(item.id)),
    removed: before.filter((item) => !afterIds.has(item.id)),
    changed: after.flatMap((item) => {
      const old = beforeById.get(item.id);
      return old ? [{ id: item.id, before: old, after: item }] : [];
    }),
    truncated,
  };
}
