import type { Kysely } from 'kysely';
import type { Database } from '../../db/schema.js';
import type { ListResponse, Page } from '../../http/schemas.js';
import { ApiError } from '../../shared/errors.js';
import { newId, nowIso } from '../../shared/ids.js';
import { type JsonObject, parseJson } from '../../shared/json.js';
import { checkJson } from '../json-check.js';
import { spoolNdjson, surrogateProblem, type UploadContext } from '../json-lines.js';
import type { ItemOrigins } from './origins.js';
import * as repo from './repository.js';
import type { CreateDataset, Dataset, PatchDataset } from './schemas.js';

/** Uploads, and the origins items are made from (wired by the composition root; absent: none). */
export type DatasetContext = UploadContext & { origins?: ItemOrigins };

export function toDataset(row: repo.DatasetRow): Dataset {
  return {
    object: 'dataset',
    id: row.id,
    project_id: row.project_id,
    label: row.label,
    description: row.description,
    metadata: parseJson<JsonObject>(row.metadata, {}),
    item_count: Number(row.item_count),
    version: Number(row.version ?? 1),
    created_at: row.created_at,
    updated_at: row.updated_at,
  };
}

export async function requireDataset(
  db: Kysely<Database>,
  projectId: string,
  ref: string,
): Promise<repo.DatasetRow> {
  const row = await repo.findDataset(db, projectId, ref);
  if (!row) throw ApiError.notFound('Dataset', ref);
  return row;
}

function newRow(
  projectId: string,
  head: { label: string; description?: string | null; metadata?: object | null },
  count: number,
): repo.DatasetRow {
  const now = nowIso();
  return {
    id: newId('ds'),
    project_id: projectId,
    label: head.label,
    description: head.description ?? null,
    metadata: JSON.stringify(head.metadata ?? {}),
    item_count: count,
    created_at: now,
    updated_at: now,
  };
}

export async function createDataset(
  ctx: DatasetContext,
  projectId: string,
  body: CreateDataset,
): Promise<Dataset> {
  const row = newRow(projectId, body, body.items.length);
  await repo.insertDataset(
    ctx.db,
    row,
    body.items.map((item) => JSON.stringify(item)),
  );
  return toDataset(row);
}

/** A JSON-lines upload: one JSON object per line; a bad line is a 422 naming it, with nothing stored. */
export async function uploadDataset(
  ctx: DatasetContext,
  projectId: string,
  query: { label?: string; description?: string },
  body: AsyncIterable<Buffer | string>,
): Promise<Dataset> {
  if (query.label === undefined) {
    throw ApiError.invalid(
      ['query', 'label'],
      'Field required: streamed uploads (JSON lines, CSV, a form) take the label as a query parameter or a form field',
      'missing',
    );
  }
  const label = query.label;
  // Refused before reading the body; the insert still catches a label taken in the meantime.
  if (await repo.labelExists(ctx.db, projectId, label)) {
    throw new ApiError('conflict', `A dataset labelled '${label}' already exists in this project`, { label });
  }
  const spool = await spoolNdjson(body, {
    dir: ctx.spoolDir,
    maxBytes: ctx.uploadLimit,
    maxLineChars: ctx.maxRowChars,
    // Validated without being parsed: a million parsed rows would cost the heap far more than the rows.
    check(text) {
      const verdict = checkJson(text);
      if (!verdict.ok) return [{ loc: [], msg: verdict.error, type: 'json_invalid' }];
      if (verdict.kind !== 'object')
        return [{ loc: [], msg: 'Each line must be a JSON object', type: 'dict_type' }];
      const unstorable = surrogateProblem(text);
      return unstorable === null ? [] : [{ loc: [], msg: unstorable, type: 'string_unicode' }];
    },
  });
  try {
    // Blank lines only (an empty file, a wrong file, a bomb of newlines) are a mistake, not a dataset.
    if (spool.count === 0) {
      throw ApiError.invalid(
        ['body'],
        'The upload has no rows: send at least one JSON object, one per line',
        'too_short',
      );
    }
    const row = newRow(projectId, { label, description: query.description ?? null }, spool.count);
    await repo.insertDataset(ctx.db, row, spool.rows());
    return toDataset(row);
  } finally {
    await spool.remove();
  }
}

export async function listDatasets(
  db: Kysely<Database>,
  projectId: string,
  page: Page,
): Promise<ListResponse<Dataset>> {
  const { rows, total } = await repo.listDatasets(db, projectId, page);
  return { object: 'list', data: rows.map(toDataset), total };
}

export async function patchDataset(
  db: Kysely<Database>,
  projectId: string,
  ref: string,
  body: PatchDataset,
): Promise<Dataset> {
  const row = await requireDataset(db, projectId, ref);
  const patch: Parameters<typeof repo.updateDataset>[2] = { updated_at: nowIso() };
  if (body.label !== undefined) patch.label = body.label;
  if (body.description !== undefined) patch.description = body.description;
  if (body.metadata !== undefined) patch.metadata = JSON.stringify(body.metadata ?? {});
  await repo.updateDataset(db, row.id, patch);
  return toDataset({ ...row, ...patch });
}

export async function deleteDataset(
  db: Kysely<Database>,
  projectId: string,
  id: string,
): Promise<{ id: string }> {
  const row = await repo.findDataset(db, projectId, id);
  if (!row || row.id !== id) throw ApiError.notFound('Dataset', id);
  if (await repo.datasetInUse(db, row.id)) {
    throw new ApiError(
      'resource_in_use',
      `Dataset '${row.label}' is used by a queued or running evaluation run; cancel it or wait until it ends`,
      { dataset: row.id },
    );
  }
  await repo.deleteDataset(db, row.id);
  return { id: row.id };
}
