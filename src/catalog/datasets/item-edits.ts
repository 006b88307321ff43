import type { Kysely } from 'kysely';
import { contentNeed, type Need, requireNeeds } from '../../auth/content.js';
import type { Database } from '../../db/schema.js';
import { ApiError } from '../../shared/errors.js';
import { newId } from '../../shared/ids.js';
import { type JsonObject, parseJson } from '../../shared/json.js';
import { type Drafted, type ItemOrigins, type OriginRef, originKind } from './origins.js';
import type { DatasetRow } from './repository.js';
import { requireDataset } from './service.js';
import type { ItemDeleted, ItemsChanged, NewItem, PatchItem } from './version-schemas.js';
import * as versions from './versions-repository.js';
import { itemView } from './versions-service.js';

/**
 * Adding, editing and removing items: each request is one change, made as the dataset's next version
 * (all its items or none). An item made `from` a task log, span, session or review is read through the
 * origins port, with what reading that object needs checked against the caller's key.
 */

type Db = Kysely<Database>;

export interface Editor {
  projectId: string;
  keyId: string;
  permissions: readonly string[];
}

export interface EditContext {
  db: Db;
  origins?: ItemOrigins | undefined;
}

/** What reading an object of each kind needs before it is looked up. */
const KIND_NEEDS: Readonly<Record<ReturnType<typeof originKind>, Need[]>> = {
  task_log: [contentNeed('task_log', 'an item made from a task log')],
  span: [contentNeed('trace', 'an item made from a span')],
  session: [contentNeed('session', 'an item made from a session')],
  review: [{ permission: 'review:read', why: 'an item made from a review shows the review' }],
};

const KIND_NAMES = { task_log: 'Task log', span: 'Span', session: 'Session', review: 'Review' } as const;

/** A dataset whose items may change: files (`/v1/files`) keep their rows as uploaded. */
async function editable(db: Db, projectId: string, ref: string): Promise<DatasetRow> {
  const dataset = await requireDataset(db, projectId, ref);
  if (dataset.purpose) {
    throw new ApiError(
      'conflict',
      `'${dataset.label}' is a file (purpose ${dataset.purpose}): its rows cannot change`,
      { dataset: dataset.id },
    );
  }
  return dataset;
}

async function draftOf(ctx: EditContext, editor: Editor, from: OriginRef, loc: (string | number)[]) {
  const kind = originKind(from);
  requireNeeds(editor.permissions, KIND_NEEDS[kind]);
  if (!ctx.origins) throw new ApiError('not_implemented', 'Items cannot be made from recorded objects here');
  const { origins } = ctx;
  let drafted: Drafted | null;
  let ref: string;
  if ('task_log_id' in from)
    [ref, drafted] = [from.task_log_id, await origins.taskLog(editor.projectId, from.task_log_id)];
  else if ('span_id' in from)
    [ref, drafted] = [from.span_id, await origins.span(editor.projectId, from.span_id, from.trace_id)];
  else if ('session_id' in from)
    [ref, drafted] = [from.session_id, await origins.session(editor.projectId, from.session_id)];
  else [ref, drafted] = [from.review_id, await origins.review(editor.projectId, from.review_id)];
  if (!drafted) {
    throw new ApiError('not_found', `${KIND_NAMES[kind]} '${ref}' not found`, {
      resource: kind,
      ref,
      loc,
    });
  }
  requireNeeds(editor.permissions, drafted.needs);
  return drafted.draft;
}

/** The stored row of a new item: the draft's fields, then the body's, which override them. */
function rowOf(body: NewItem, draft: Drafted['draft'] | null): JsonObject {
  const row: JsonObject = { ...(draft?.fields ?? {}), ...(body.data ?? {}) };
  const pick = <K extends 'input' | 'output' | 'expected' | 'metadata'>(k: K) => {
    const value = body[k] !== undefined ? body[k] : draft?.[k];
    if (value !== undefined) row[k] = value as JsonObject[string];
  };
  pick('input');
  pick('output');
  pick('expected');
  pick('metadata');
  if (body.id !== undefined) row.id = body.id;
  return row;
}

function changed(dataset: DatasetRow, applied: versions.Applied): ItemsChanged {
  return {
    object: 'dataset.change',
    dataset_id: dataset.id,
    version: applied.version,
    item_count: applied.itemCount,
    items: applied.rows.map((r) => itemView(dataset.id, r)),
  };
}

async function refuseTaken(
  db: Db,
  dataset: DatasetRow,
  ids: (string | undefined)[],
  at: (i: number) => (string | number)[],
) {
  const seen = new Set<string>();
  for (const [i, id] of ids.entries()) {
    if (id === undefined) continue;
    if (seen.has(id) || (await versions.findCurrentItem(db, dataset.id, id))) {
      throw new ApiError('conflict', `The dataset already has an item '${id}'`, { item: id, loc: at(i) });
    }
    seen.add(id);
  }
}

/** Adds items (made from what they name, if they do): one new version. */
export async function addItems(
  ctx: EditContext,
  editor: Editor,
  ref: string,
  bodies: NewItem[],
  loc: (i: number) => (string | number)[],
): Promise<ItemsChanged> {
  const dataset = await editable(ctx.db, editor.projectId, ref);
  await refuseTaken(
    ctx.db,
    dataset,
    bodies.map((b) => b.id),
    (i) => [...loc(i), 'id'],
  );
  // Sources are read before the change's transaction (on SQLite that holds the one connection).
  const added: versions.NewVersionRow[] = [];
  for (const [i, body] of bodies.entries()) {
    const draft = body.from ? await draftOf(ctx, editor, body.from, [...loc(i), 'from']) : null;
    const id = body.id ?? newId('dsi');
    added.push({
      item_id: id,
      data: JSON.stringify(rowOf(body, draft)),
      splits: body.splits ?? [],
      origin: draft ? JSON.stringify(draft.origin) : null,
    });
  }
  const applied = await versions.applyChange(
    ctx.db,
    dataset.id,
    { added, edited: [], removed: [] },
    editor.keyId,
  );
  return changed(dataset, applied);
}

async function requireItem(db: Db, dataset: DatasetRow, itemRef: string): Promise<versions.VersionRow> {
  const row = await versions.findCurrentItem(db, dataset.id, itemRef);
  if (!row) {
    throw new ApiError('not_found', `Dataset '${dataset.label}' has no item '${itemRef}'`, {
      resource: 'dataset_item',
      ref: itemRef,
    });
  }
  return row;
}

/** Edits an item: the fields given replace its own (`data`'s are merged in); one new version. */
export async function patchItem(
  ctx: EditContext,
  editor: Editor,
  ref: string,
  itemRef: string,
  body: PatchItem,
): Promise<ItemsChanged> {
  const dataset = await editable(ctx.db, editor.projectId, ref);
  const current = await requireItem(ctx.db, dataset, itemRef);
  const old = parseJson<JsonObject>(current.data, {});
  const row: JsonObject = { ...old, ...(body.data ?? {}) };
  for (const k of ['input', 'output', 'expected', 'metadata'] as const) {
    if (body[k] !== undefined) row[k] = body[k] as JsonObject[string];
  }
  const itemId = itemView(dataset.id, current).id;
  const next: versions.NewVersionRow = {
    item_id: itemId,
    data: JSON.stringify(row),
    splits: body.splits ?? current.splits,
    origin: current.origin,
    seq: current.seq,
  };
  const applied = await versions.applyChange(
    ctx.db,
    dataset.id,
    { added: [], edited: [{ row: current.row, next }], removed: [] },
    editor.keyId,
  );
  return changed(dataset, applied);
}

/** Removes an item from the dataset's next version (earlier versions keep it). */
export async function removeItem(
  ctx: EditContext,
  editor: Editor,
  ref: string,
  itemRef: string,
): Promise<ItemDeleted> {
  const dataset = await editable(ctx.db, editor.projectId, ref);
  const current = await requireItem(ctx.db, dataset, itemRef);
  const applied = await versions.applyChange(
    ctx.db,
    dataset.id,
    { added: [], edited: [], removed: [current.row] },
    editor.keyId,
  );
  return {
    object: 'dataset.item',
    id: itemView(dataset.id, current).id,
    deleted: true,
    dataset_id: dataset.id,
    version: applied.version,
  };
}
