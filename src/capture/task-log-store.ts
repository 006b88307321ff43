import {
  type Expression,
  type Insertable,
  type Kysely,
  type Selectable,
  type SqlBool,
  sql,
  type Transaction,
} from 'kysely';
import { insertRows } from '../db/bulk.js';
import type { Database, TaskLogTable } from '../db/schema.js';

/*
 * The task log store: every write of the task_logs table is here (a test scans src/ for writes elsewhere).
 * Reads stay with the features that read (catalog/logs, sessions, runs): they never change a row.
 */

// 19 parameters per row: 500 rows stay below SQLite's 32766 and PostgreSQL's 65535 bound parameters.
const INSERT_ROWS = 500;

export type LogRow = Selectable<TaskLogTable>;
export type NewLogRow = Insertable<TaskLogTable>;
/** A task log row before its seq is known. */
export type LogDraft = Omit<NewLogRow, 'seq'> & { id: string; container_id: string };

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

export async function insertLogRows(trx: Transaction<Database>, rows: NewLogRow[]): Promise<void> {
  await insertRows(trx, 'task_logs', rows, INSERT_ROWS, (batch) => trx.insertInto('task_logs').values(batch));
}

/**
 * Replaces a task log's metadata (JSON text); true when the log exists in the project (and matches `only`,
 * when given).
 */
export async function setLogMetadata(
  db: Kysely<Database>,
  projectId: string,
  id: string,
  metadata: string,
  only?: Expression<SqlBool>,
): Promise<boolean> {
  const result = await db
    .updateTable('task_logs')
    .set({ metadata })
    .where('id', '=', id)
    .where('project_id', '=', projectId)
    .$if(only !== undefined, (qb) => qb.where(only as Expression<SqlBool>))
    .executeTakeFirst();
  return Number(result.numUpdatedRows) > 0;
}

/**
 * Rewrites a stored task log as `row` (a gateway call joined into the log its caller's span made): the
 * row takes the record's id and what it recorded, and keeps its seq, container and session.
 */
export async function replaceLog(
  trx: Transaction<Database>,
  projectId: string,
  id: string,
  row: NewLogRow,
): Promise<void> {
  const { seq: _seq, container_id: _container, session_id: _session, project_id: _project, ...set } = row;
  await trx
    .updateTable('task_logs')
    .set(set)
    .where('project_id', '=', projectId)
    .where('id', '=', id)
    .execute();
}

/** What a span's own log events say of a call that its span alone could not (content captured after). */
export interface LogContent {
  input: string;
  output: string | null;
  request: string;
  response: string;
  metadata: string;
}

/** Replaces a task log's recorded content (an ingested call whose content arrived in log events). */
export async function setLogContent(
  db: Kysely<Database>,
  projectId: string,
  id: string,
  content: LogContent,
): Promise<void> {
  await db
    .updateTable('task_logs')
    .set(content)
    .where('project_id', '=', projectId)
    .where('id', '=', id)
    .execute();
}
