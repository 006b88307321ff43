import { type Kysely, sql } from 'kysely';
import type { Database } from '../db/schema.js';
import type { QueuedChunk, RunQueue } from '../executor/run-queue.js';
import { nowIso } from '../shared/ids.js';
import { selectionPoint, storeSelection, submit } from './selection.js';

/** Task logs (when noting) or idle sessions (when selecting) one transaction takes at most. */
export const SWEEP_PAGE = 1_000;

interface SessionMonitor {
  id: string;
  run_id: string;
  container_id: string;
  environment: string;
  sampling_rate: number;
  idle_seconds: number | null;
}

/** Locks an enabled session monitor's row; its cursor and next position, or null when paused or gone. */
async function lock(db: Kysely<Database>, monitorId: string) {
  const row = await db
    .updateTable('monitors')
    .set({ sessions_through: sql`sessions_through` })
    .where('id', '=', monitorId)
    .where('enabled', '=', 1)
    .where('unit', '=', 'session')
    .returning(['sessions_through', 'next_position'])
    .executeTakeFirst();
  return row ? { through: Number(row.sessions_through), next: Number(row.next_position) } : null;
}

/**
 * Notes, in one transaction, the sessions of the container's task logs committed past the monitor's
 * cursor (seq order, a page at most): those its sampling chooses (SHA-256 of monitor id and session id,
 * as calls are chosen) wait in `monitor_pending_sessions`; the cursor moves past the page. Seqs are given
 * at commit, so a batch committed late (a spool replayed after a crash) is still noted. Returns whether
 * more logs wait.
 */
async function noteStep(db: Kysely<Database>, monitor: SessionMonitor): Promise<boolean> {
  return db.transaction().execute(async (tx) => {
    const mark = await lock(tx, monitor.id);
    if (!mark) return false;
    const logs = await tx
      .selectFrom('task_logs')
      .select(['seq', 'session_id'])
      .where('container_id', '=', monitor.container_id)
      .where('seq', '>', mark.through)
      .orderBy('seq')
      .limit(SWEEP_PAGE)
      .execute();
    if (logs.length === 0) return false;
    const sessions = [...new Set(logs.flatMap((l) => (l.session_id ? [l.session_id] : [])))].filter(
      (id) => selectionPoint(monitor.id, id) < monitor.sampling_rate,
    );
    if (sessions.length) {
      const now = nowIso();
      await tx
        .insertInto('monitor_pending_sessions')
        .values(sessions.map((session_id) => ({ monitor_id: monitor.id, session_id, noted_at: now })))
        .onConflict((oc) => oc.columns(['monitor_id', 'session_id']).doNothing())
        .execute();
    }
    await tx
      .updateTable('monitors')
      .set({ sessions_through: Number(logs[logs.length - 1]!.seq) })
      .where('id', '=', monitor.id)
      .execute();
    return logs.length === SWEEP_PAGE;
  });
}

/**
 * Selects, in one transaction, the monitor's pending sessions that have been idle since `cutoff` or were
 * ended explicitly: each leaves the pending table, and one not selected before becomes a position of the
 * monitor's run (with its chunks); a session scored before and active again is not scored twice.
 */
async function selectStep(
  db: Kysely<Database>,
  monitor: SessionMonitor,
  cutoff: string,
  chunkSize: number,
): Promise<{ chunks: QueuedChunk[]; more: boolean } | null> {
  return db.transaction().execute(async (tx) => {
    const mark = await lock(tx, monitor.id);
    if (!mark) return null;
    const idle = await tx
      .selectFrom('monitor_pending_sessions as p')
      .innerJoin('task_sessions as s', 's.id', 'p.session_id')
      .select(['s.id', 's.last_activity_at'])
      .where('p.monitor_id', '=', monitor.id)
      .where((eb) => eb.or([eb('s.last_activity_at', '<=', cutoff), eb('s.ended_at', 'is not', null)]))
      .orderBy('s.last_activity_at')
      .orderBy('s.id')
      .limit(SWEEP_PAGE)
      .execute();
    if (idle.length === 0) return null;
    const ids = idle.map((r) => r.id);
    await tx
      .deleteFrom('monitor_pending_sessions')
      .where('monitor_id', '=', monitor.id)
      .where('session_id', 'in', ids)
      .execute();
    const already = new Set(
      (
        await tx
          .selectFrom('monitor_selections')
          .select('log_id')
          .where('monitor_id', '=', monitor.id)
          .where('log_id', 'in', ids)
          .execute()
      ).map((r) => r.log_id),
    );
    const chosen = idle
      .filter((r) => !already.has(r.id))
      .map((r) => ({ id: r.id, createdAt: r.last_activity_at }));
    const chunks = chosen.length ? await storeSelection(tx, monitor, chosen, mark.next, chunkSize) : [];
    await tx
      .updateTable('monitors')
      .set({ next_position: sql`next_position + ${chosen.length}` })
      .where('id', '=', monitor.id)
      .execute();
    return { chunks, more: idle.length === SWEEP_PAGE };
  });
}

/**
 * One sweep of every enabled session monitor: notes the sessions of newly committed calls, then selects
 * those idle for the monitor's `idle_seconds` as of `now`, or ended. Returns the number of sessions selected.
 */
export async function sweepSessions(
  db: Kysely<Database>,
  queue: RunQueue,
  chunkSize: number,
  now: number = Date.now(),
  selected?: (monitorId: string, count: number) => void,
): Promise<number> {
  const monitors = await db
    .selectFrom('monitors')
    .select(['id', 'run_id', 'container_id', 'environment', 'sampling_rate', 'idle_seconds'])
    .where('enabled', '=', 1)
    .where('unit', '=', 'session')
    .execute();
  let count = 0;
  for (const monitor of monitors) {
    while (await noteStep(db, monitor)) {
      // a long backlog: one page per transaction
    }
    const cutoff = new Date(now - (monitor.idle_seconds ?? 0) * 1000).toISOString();
    for (;;) {
      const step = await selectStep(db, monitor, cutoff, chunkSize);
      if (!step) break;
      await submit(queue, monitor, step.chunks);
      const n = step.chunks.reduce((sum, c) => sum + c.to - c.from, 0);
      if (n > 0) selected?.(monitor.id, n);
      count += n;
      if (!step.more) break;
    }
  }
  return count;
}
