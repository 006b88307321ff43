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

export async function updateMonitor(
  db: Db,
  id: string,
  patch: Partial<
    Pick<MonitorTable, 'name' | 'sampling_rate' | 'filter' | 'enabled' | 'alert' | 'alert_state'>
  >,
): Promise<void> {
  await db
    .updateTable('monitors')
    .set({ ...patch, updated_at: nowIso() })
    .where('id', '=', id)
    .execute();
}

export async function deleteMonitor(db: Db, id: string): Promise<void> {
  await db.deleteFrom('monitor_selections').where('monitor_id', '=', id).execute();
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
    .select(['id', 'project_id', 'container_id', 'model', 'metadata', 'created_at'])
    .where('container_id', '=', containerId)
    .where('created_at', '>=', since)
    .where('created_at', '<', until)
    .orderBy('seq')
    .execute();
}
