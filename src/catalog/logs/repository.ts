import { type Insertable, type Kysely, type Selectable, sql, type Transaction } from 'kysely';
import { insertRows } from '../../db/bulk.js';
import type { Database, TaskLogTable } from '../../db/schema.js';

export type LogRow = Selectable<TaskLogTable>;
export type NewLogRow = Insertable<TaskLogTable>;
/** A task log row before its seq is known. */
export type LogDraft = Omit<NewLogRow, 'seq'> & { id: string; container_id: string };

// 19 parameters per row: 500 rows stay below SQLite's 32766 and PostgreSQL's 65535 bound parameters.
const INSERT_ROWS = 500;

/**
 * Hands out `n` consecutive seqs of a container and returns the first, or null when the container does
 * not exist. The counter row stays locked until the transaction ends, so concurrent writers (in this or
 * another process) queue on it: ranges never overlap, and a rolled-back transaction leaves no gap.
 */
export async function reserveSeqs(
  trx: Transaction<Database>,
  containerId: string,
  n: number,
): Promise<number | null> {
  const row = await trx
    .insertInto('task_log_counters')
    .columns(['container_id', 'last_seq'])
    .expression((eb) =>
      eb
        .selectFrom('containers')
        .select(['containers.id as container_id', sql<number>`cast(${n} as bigint)`.as('last_seq')])
        .where('containers.id', '=', containerId),
    )
    .onConflict((oc) =>
      oc.column('container_id').doUpdateSet((eb) => ({
        last_seq: eb('task_log_counters.last_seq', '+', eb.ref('excluded.last_seq')),
      })),
    )
    .returning('last_seq')
    .executeTakeFirst();
  return row ? Number(row.last_seq) - n + 1 : null;
}

export async function insertLogRows(trx: Transaction<Database>, rows: NewLogRow[]): Promise<void> {
  await insertRows(trx, 'task_logs', rows, INSERT_ROWS, (batch) => trx.insertInto('task_logs').values(batch));
}

/** How many logs the container has (seqs are gap-free from 1, so the counter is the count). */
export async function lastSeq(db: Kysely<Database>, containerId: string): Promise<number> {
  const row = await db
    .selectFrom('task_log_counters')
    .select('last_seq')
    .where('container_id', '=', containerId)
    .executeTakeFirst();
  return row ? Number(row.last_seq) : 0;
}

export interface LogFilter {
  model?: string;
  /** ISO time; logs created at or after it. */
  since?: string;
}

const filtered = (f: LogFilter) => f.model !== undefined || f.since !== undefined;

function base(db: Kysely<Database>, containerId: string, f: LogFilter) {
  let q = db.selectFrom('task_logs').where('container_id', '=', containerId);
  if (f.model !== undefined) q = q.where('model', '=', f.model);
  if (f.since !== undefined) q = q.where('created_at', '>=', f.since);
  return q;
}

export async function countLogs(db: Kysely<Database>, containerId: string, f: LogFilter): Promise<number> {
  if (!filtered(f)) return lastSeq(db, containerId);
  const row = await base(db, containerId, f)
    .select((eb) => eb.fn.countAll<number | string>().as('n'))
    .executeTakeFirstOrThrow();
  return Number(row.n);
}

/** Logs at positions [from, to) of the (filtered) seq order. */
export async function readLogs(
  db: Kysely<Database>,
  containerId: string,
  f: LogFilter,
  from: number,
  to: number,
): Promise<LogRow[]> {
  if (to <= from) return [];
  const q = base(db, containerId, f).selectAll().orderBy('seq');
  // Unfiltered, position p is seq p + 1: an index range instead of an OFFSET scan.
  if (!filtered(f)) return q.where('seq', '>', from).where('seq', '<=', to).execute();
  return q
    .limit(to - from)
    .offset(from)
    .execute();
}

/** One task log of a project by id, or undefined. */
export async function findLog(
  db: Kysely<Database>,
  projectId: string,
  id: string,
): Promise<LogRow | undefined> {
  return db
    .selectFrom('task_logs')
    .selectAll()
    .where('id', '=', id)
    .where('project_id', '=', projectId)
    .executeTakeFirst();
}

/** Replaces a task log's metadata (JSON text); true when the log exists in the project. */
export async function setLogMetadata(
  db: Kysely<Database>,
  projectId: string,
  id: string,
  metadata: string,
): Promise<boolean> {
  const result = await db
    .updateTable('task_logs')
    .set({ metadata })
    .where('id', '=', id)
    .where('project_id', '=', projectId)
    .executeTakeFirst();
  return Number(result.numUpdatedRows) > 0;
}
