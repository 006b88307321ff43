import { type Insertable, type Kysely, type Selectable, sql, type Transaction } from 'kysely';
import type { Database, MonitorTable, RunChunkTable } from '../db/schema.js';
import { nowIso } from '../shared/ids.js';

type Db = Kysely<Database> | Transaction<Database>;

export type MonitorRow = Selectable<MonitorTable>;

export async function insertMonitor(db: Db, row: Insertable<MonitorTable>): Promise<void> {
  await db.insertInto('monitors').values(row).execute();
}

export function findMonitor(db: Db, projectId: string, ref: string): Promise<MonitorRow | undefined> {
  return db
    .selectFrom('monitors')
    .selectAll()
    .where('project_id', '=', projectId)
    .where((eb) => (ref.startsWith('mon_') ? eb('id', '=', ref) : eb('name', '=', ref)))
    .executeTakeFirst();
}

export async function listMonitors(
  db: Db,
  projectId: string,
  containerId: string | null,
  page: { limit: number; offset: number },
): Promise<{ rows: MonitorRow[]; total: number }> {
  let rowsQ = db.selectFrom('monitors').selectAll().where('project_id', '=', projectId);
  let countQ = db
    .selectFrom('monitors')
    .select((eb) => eb.fn.countAll<number | string>().as('n'))
    .where('project_id', '=', projectId);
  if (containerId !== null) {
    rowsQ = rowsQ.where('container_id', '=', containerId);
    countQ = countQ.where('container_id', '=', containerId);
  }
  const [rows, count] = await Promise.all([
    rowsQ.orderBy('created_at', 'desc').orderBy('id', 'desc').limit(page.limit).offset(page.offset).execute(),
    countQ.executeTakeFirstOrThrow(),
  ]);
  return { rows, total: Number(count.n) };
}

/** The container's last committed seq, as an expression (0 before its first log). */
const containerEnd = (containerId: string) =>
  sql<number>`coalesce((select c.last_seq from task_log_counters c where c.container_id = ${containerId}), 0)`;

/** The container's last committed seq: where a new monitor's selection starts. */
export async function containerEndSeq(db: Db, containerId: string): Promise<number> {
  const result = await sql<{ end: number | string }>`select ${containerEnd(containerId)} as end`.execute(db);
  return Number(result.rows[0]?.end ?? 0);
}

export async function updateMonitor(
  db: Db,
  id: string,
  patch: Partial<
    Pick<MonitorTable, 'name' | 'sampling_rate' | 'filter' | 'enabled' | 'alert' | 'alert_state'>
  >,
  /** Resuming: selection goes on from the container's present end (calls of the pause are not scored). */
  resumeFrom?: string,
): Promise<void> {
  await db
    .updateTable('monitors')
    .set({
      ...patch,
      ...(resumeFrom !== undefined && { selected_through: containerEnd(resumeFrom) }),
      updated_at: nowIso(),
    })
    .where('id', '=', id)
    .execute();
}

export async function deleteMonitor(db: Db, id: string): Promise<void> {
  await db.deleteFrom('monitor_selections').where('monitor_id', '=', id).execute();
  await db.deleteFrom('monitor_pending_sessions').where('monitor_id', '=', id).execute();
  await db.deleteFrom('monitors').where('id', '=', id).execute();
}

/** Enabled monitors of these containers (what the selector applies to a committed batch). */
export function enabledMonitors(db: Db, containerIds: readonly string[]): Promise<MonitorRow[]> {
  if (containerIds.length === 0) return Promise.resolve([]);
  return db
    .selectFrom('monitors')
    .selectAll()
    .where('container_id', 'in', [...containerIds])
    .where('enabled', '=', 1)
    .where('unit', '=', 'call')
    .execute();
}

/**
 * Hands out `n` positions of an enabled monitor's run: the first one, or null when the monitor is paused
 * or gone (checked in the same statement, so a pause stops selection from the moment it is stored).
 */
export async function reservePositions(db: Db, monitorId: string, n: number): Promise<number | null> {
  const row = await db
    .updateTable('monitors')
    .set({ next_position: sql`next_position + ${n}` })
    .where('id', '=', monitorId)
    .where('enabled', '=', 1)
    .returning('next_position')
    .executeTakeFirst();
  return row ? Number(row.next_position) - n : null;
}

/**
 * Locks an enabled monitor's row for the selection transaction and reads where its selection stands;
 * null when it is paused or gone. Concurrent selections of one monitor queue here, so each seq is
 * considered once.
 */
export async function lockMark(
  db: Db,
  monitorId: string,
): Promise<{ selectedThrough: number; nextPosition: number } | null> {
  const row = await db
    .updateTable('monitors')
    .set({ selected_through: sql`selected_through` })
    .where('id', '=', monitorId)
    .where('enabled', '=', 1)
    .returning(['selected_through', 'next_position'])
    .executeTakeFirst();
  return row
    ? { selectedThrough: Number(row.selected_through), nextPosition: Number(row.next_position) }
    : null;
}

/** Moves the mark to `through` and takes `n` positions (the monitor's row is locked by `lockMark`). */
export async function advanceMark(db: Db, monitorId: string, through: number, n: number): Promise<void> {
  await db
    .updateTable('monitors')
    .set({ selected_through: through, next_position: sql`next_position + ${n}` })
    .where('id', '=', monitorId)
    .execute();
}

/** Enabled monitors whose container has committed logs past their mark, with the container's end. */
export async function laggingMonitors(db: Db): Promise<(MonitorRow & { container_end: number })[]> {
  const rows = await db
    .selectFrom('monitors as m')
    .innerJoin('task_log_counters as c', 'c.container_id', 'm.container_id')
    .selectAll('m')
    .select('c.last_seq as container_end')
    .where('m.enabled', '=', 1)
    .where('m.unit', '=', 'call')
    .whereRef('c.last_seq', '>', 'm.selected_through')
    .execute();
  return rows.map((r) => ({ ...r, container_end: Number(r.container_end) }));
}

/** The container's logs with seq in (after, through], in seq order: what selection reads from the database. */
export function logsAfter(db: Db, containerId: string, after: number, through: number) {
  return db
    .selectFrom('task_logs')
    .select(['id', 'project_id', 'container_id', 'seq', 'model', 'metadata', 'created_at'])
    .where('container_id', '=', containerId)
    .where('seq', '>', after)
    .where('seq', '<=', through)
    .orderBy('seq')
    .execute();
}

export async function insertSelections(
  db: Db,
  rows: {
    monitor_id: string;
    position: number;
    log_id: string;
    log_created_at: string;
    selected_at: string;
  }[],
): Promise<void> {
  // 5 columns a row: 500 rows stay under SQLite's bound-parameter limit.
  for (let i = 0; i < rows.length; i += 500) {
    await db
      .insertInto('monitor_selections')
      .values(rows.slice(i, i + 500))
      .execute();
  }
}

export async function insertChunk(db: Db, row: RunChunkTable): Promise<void> {
  await db.insertInto('run_chunks').values(row).execute();
}

/** Calls selected so far, and the oldest selected call with no stored row yet (the monitor's lag). */
export async function progressOf(
  db: Db,
  monitorId: string,
  runId: string,
): Promise<{ selected: number; oldestUnscored: string | null }> {
  const result = await sql<{ selected: number | string; oldest: string | null }>`
    select (select count(*) from monitor_selections where monitor_id = ${monitorId}) as selected,
      (select min(ms.log_created_at) from monitor_selections ms where ms.monitor_id = ${monitorId}
        and not exists (select 1 from run_samples s where s.run_id = ${runId} and s.launch_index = 0
          and s.position = ms.position)) as oldest`.execute(db);
  const row = result.rows[0];
  return { selected: Number(row?.selected ?? 0), oldestUnscored: row?.oldest ?? null };
}

/** The container's calls recorded within [since, until), oldest first (a backfill's candidates). */
export function logsBetween(db: Db, containerId: string, since: string, until: string) {
  return db
    .selectFrom('task_logs')
    .select(['id', 'project_id', 'container_id', 'seq', 'model', 'metadata', 'created_at'])
    .where('container_id', '=', containerId)
    .where('created_at', '>=', since)
    .where('created_at', '<', until)
    .orderBy('seq')
    .execute();
}
