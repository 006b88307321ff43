import type { Kysely, Selectable, Transaction } from 'kysely';
import { isUniqueViolation } from '../db/database.js';
import type { Page } from '../db/paging.js';
import type { Database } from '../db/schema.js';
import type {
  PromptLabelMoveTable,
  PromptLabelTable,
  PromptTable,
  PromptVersionTable,
} from '../db/schema-prompts.js';
import { ApiError } from '../shared/errors.js';
import { newId } from '../shared/ids.js';

/** The SQL of prompts: prompts, their versions, labels and every move of a label. */
export type PromptRow = Selectable<PromptTable>;
export type VersionRow = Selectable<PromptVersionTable>;
export type LabelRow = Selectable<PromptLabelTable>;
export type MoveRow = Selectable<PromptLabelMoveTable>;
type Db = Kysely<Database> | Transaction<Database>;

/** What a new version is made of (its number is given by the store). */
export type NewVersion = Omit<PromptVersionTable, 'prompt_id' | 'version'>;

export async function insertPrompt(
  db: Kysely<Database>,
  prompt: PromptTable,
  first: NewVersion,
  labels: readonly string[],
): Promise<void> {
  try {
    await db.transaction().execute(async (trx) => {
      await trx.insertInto('prompts').values(prompt).execute();
      await trx
        .insertInto('prompt_versions')
        .values({ ...first, prompt_id: prompt.id, version: 1 })
        .execute();
      for (const label of labels) await moveLabelIn(trx, prompt.id, label, 1, first.author, 'move');
    });
  } catch (err) {
    if (isUniqueViolation(err)) {
      throw new ApiError('conflict', `A prompt named '${prompt.name}' already exists in this project`, {
        name: prompt.name,
      });
    }
    throw err;
  }
}

/** A prompt of the project by id (`prm_…`) or name. */
export function findPrompt(db: Db, projectId: string, ref: string): Promise<PromptRow | undefined> {
  return db
    .selectFrom('prompts')
    .selectAll()
    .where('project_id', '=', projectId)
    .where(ref.startsWith('prm_') ? 'id' : 'name', '=', ref)
    .executeTakeFirst();
}

export async function listPrompts(
  db: Kysely<Database>,
  projectId: string,
  page: Page,
  nameContains?: string,
): Promise<{ rows: PromptRow[]; total: number }> {
  let rows = db.selectFrom('prompts').selectAll().where('project_id', '=', projectId);
  let count = db
    .selectFrom('prompts')
    .select((eb) => eb.fn.countAll<number | string>().as('n'))
    .where('project_id', '=', projectId);
  if (nameContains !== undefined) {
    const like = `%${nameContains.replace(/[\\%_]/g, (c) => `\\${c}`)}%`;
    rows = rows.where((eb) => eb('name', 'like', like));
    count = count.where((eb) => eb('name', 'like', like));
  }
  const [data, n] = await Promise.all([
    rows.orderBy('created_at', 'desc').orderBy('id', 'desc').limit(page.limit).offset(page.offset).execute(),
    count.executeTakeFirstOrThrow(),
  ]);
  return { rows: data, total: Number(n.n) };
}

/** A new version numbered after the latest, labels moved to it, in one transaction. */
export async function insertVersion(
  db: Kysely<Database>,
  promptId: string,
  version: NewVersion,
  labels: readonly string[],
): Promise<number> {
  return db.transaction().execute(async (trx) => {
    // The counter's row lock (PostgreSQL) or the write lock (SQLite) orders concurrent versions.
    const bumped = await trx
      .updateTable('prompts')
      .set((eb) => ({ latest_version: eb('latest_version', '+', 1), updated_at: version.created_at }))
      .where('id', '=', promptId)
      .returning('latest_version')
      .executeTakeFirstOrThrow();
    const number = Number(bumped.latest_version);
    await trx
      .insertInto('prompt_versions')
      .values({ ...version, prompt_id: promptId, version: number })
      .execute();
    for (const label of labels) await moveLabelIn(trx, promptId, label, number, version.author, 'move');
    return number;
  });
}

export function findVersion(db: Db, promptId: string, version: number): Promise<VersionRow | undefined> {
  return db
    .selectFrom('prompt_versions')
    .selectAll()
    .where('prompt_id', '=', promptId)
    .where('version', '=', version)
    .executeTakeFirst();
}

export async function listVersions(
  db: Kysely<Database>,
  promptId: string,
  page: Page,
): Promise<VersionRow[]> {
  return db
    .selectFrom('prompt_versions')
    .selectAll()
    .where('prompt_id', '=', promptId)
    .orderBy('version', 'desc')
    .limit(page.limit)
    .offset(page.offset)
    .execute();
}

export function labelsOf(db: Db, promptIds: readonly string[]): Promise<LabelRow[]> {
  if (promptIds.length === 0) return Promise.resolve([]);
  return db
    .selectFrom('prompt_labels')
    .selectAll()
    .where('prompt_id', 'in', promptIds)
    .orderBy('name')
    .execute();
}

export function findLabel(db: Db, promptId: string, name: string): Promise<LabelRow | undefined> {
  return db
    .selectFrom('prompt_labels')
    .selectAll()
    .where('prompt_id', '=', promptId)
    .where('name', '=', name)
    .executeTakeFirst();
}

export function movesOf(db: Db, promptId: string, label?: string): Promise<MoveRow[]> {
  let q = db.selectFrom('prompt_label_moves').selectAll().where('prompt_id', '=', promptId);
  if (label !== undefined) q = q.where('label', '=', label);
  return q.orderBy('moved_at', 'desc').orderBy('id', 'desc').execute();
}

/** Points `label` at `version` (creating it), recording the move; answers where the label was. */
async function moveLabelIn(
  trx: Transaction<Database>,
  promptId: string,
  label: string,
  version: number,
  by: string,
  action: 'move' | 'rollback',
): Promise<number | null> {
  const now = new Date().toISOString();
  const before = await findLabel(trx, promptId, label);
  if (before) {
    await trx
      .updateTable('prompt_labels')
      .set({ version, updated_by: by, updated_at: now })
      .where('prompt_id', '=', promptId)
      .where('name', '=', label)
      .execute();
  } else {
    await trx
      .insertInto('prompt_labels')
      .values({ prompt_id: promptId, name: label, version, updated_by: by, updated_at: now })
      .execute();
  }
  await trx
    .insertInto('prompt_label_moves')
    .values({
      id: newId('plm'),
      prompt_id: promptId,
      label,
      action,
      from_version: before?.version ?? null,
      to_version: version,
      reverted: 0,
      moved_by: by,
      moved_at: now,
    })
    .execute();
  return before?.version ?? null;
}

export function moveLabel(
  db: Kysely<Database>,
  promptId: string,
  label: string,
  version: number,
  by: string,
): Promise<number | null> {
  return db.transaction().execute((trx) => moveLabelIn(trx, promptId, label, version, by, 'move'));
}

/**
 * Undoes the label's latest move not undone yet: the label goes back to where that move found it, and
 * the move is marked reverted (a second rollback undoes the move before it). Answers the versions, or
 * null when no move can be undone (the label's first move created it).
 */
export function rollbackLabel(
  db: Kysely<Database>,
  promptId: string,
  label: string,
  by: string,
): Promise<{ from: number; to: number } | null> {
  return db.transaction().execute(async (trx) => {
    const current = await findLabel(trx, promptId, label);
    if (!current) return null;
    const last = await trx
      .selectFrom('prompt_label_moves')
      .selectAll()
      .where('prompt_id', '=', promptId)
      .where('label', '=', label)
      .where('action', '=', 'move')
      .where('reverted', '=', 0)
      .orderBy('moved_at', 'desc')
      .orderBy('id', 'desc')
      .executeTakeFirst();
    if (!last || last.from_version === null) return null;
    await trx.updateTable('prompt_label_moves').set({ reverted: 1 }).where('id', '=', last.id).execute();
    await moveLabelIn(trx, promptId, label, last.from_version, by, 'rollback');
    return { from: current.version, to: last.from_version };
  });
}

/** Removes the label (its history kept); false when it did not exist. */
export function deleteLabel(
  db: Kysely<Database>,
  promptId: string,
  label: string,
  by: string,
): Promise<boolean> {
  return db.transaction().execute(async (trx) => {
    const current = await findLabel(trx, promptId, label);
    if (!current) return false;
    await trx
      .deleteFrom('prompt_labels')
      .where('prompt_id', '=', promptId)
      .where('name', '=', label)
      .execute();
    await trx
      .insertInto('prompt_label_moves')
      .values({
        id: newId('plm'),
        prompt_id: promptId,
        label,
        action: 'delete',
        from_version: current.version,
        to_version: null,
        reverted: 0,
        moved_by: by,
        moved_at: new Date().toISOString(),
      })
      .execute();
    return true;
  });
}
