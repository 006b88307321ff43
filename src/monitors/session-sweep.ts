import { type Kysely, sql } from 'kysely';
import type { Database } from '../db/schema.js';
import type { QueuedChunk, RunQueue } from '../executor/run-queue.js';
import { selectionPoint, storeSelection, submit } from './selection.js';

/** Sessions one sweep transaction of one monitor considers at most (a long backlog takes several). */
export const SWEEP_PAGE = 1_000;

interface SessionMonitor {
  id: string;
  run_id: string;
  container_id: string;
  environment: string;
  sampling_rate: number;
  idle_seconds: number | null;
  filter: string;
  created_at: string;
}

/**
 * One step of a session monitor's sweep, in one transaction: the monitor's row is locked and its cursor
 * read; the container's sessions last active after the cursor and idle since `cutoff` are read (oldest
 * activity first, at most a page); those the monitor samples (SHA-256 of monitor id and session id, as
 * calls are) and has not selected before are stored as positions with their chunks; the cursor moves to
 * the last activity considered. So a session is considered once whichever process sweeps, and one the
 * process died before selecting is found by the next sweep.
 */
async function sweepStep(
  db: Kysely<Database>,
  monitor: SessionMonitor,
  cutoff: string,
  chunkSize: number,
): Promise<{ chunks: QueuedChunk[]; more: boolean } | null> {
  return db.transaction().execute(async (tx) => {
    const locked = await tx
      .updateTable('monitors')
      .set({ sessions_through: sql`sessions_through` })
      .where('id', '=', monitor.id)
      .where('enabled', '=', 1)
      .where('unit', '=', 'session')
      .returning(['sessions_through', 'next_position'])
      .executeTakeFirst();
    if (!locked) return null;
    const mark = locked.sessions_through ?? monitor.created_at;
    if (cutoff <= mark) return null;
    const rows = await tx
      .selectFrom('task_sessions as s')
      .select(['s.id', 's.last_activity_at'])
      .where('s.container_id', '=', monitor.container_id)
      .where('s.last_activity_at', '>', mark)
      .where('s.last_activity_at', '<=', cutoff)
      .orderBy('s.last_activity_at')
      .orderBy('s.id')
      .limit(SWEEP_PAGE)
      .execute();
    let through = cutoff;
    let page = rows;
    const more = rows.length === SWEEP_PAGE;
    if (more) {
      // A full page: stop before its last instant (the rest of that instant comes with the next page),
      // unless the whole page is one instant.
      const last = rows[rows.length - 1]!.last_activity_at;
      const before = rows.filter((r) => r.last_activity_at < last);
      page = before.length > 0 ? before : rows;
      through = page[page.length - 1]!.last_activity_at;
    }
    const sampled = page.filter((r) => selectionPoint(monitor.id, r.id) < monitor.sampling_rate);
    // A session active again after it was scored is not scored twice.
    const already = sampled.length
      ? new Set(
          (
            await tx
              .selectFrom('monitor_selections')
              .select('log_id')
              .where('monitor_id', '=', monitor.id)
              .where(
                'log_id',
                'in',
                sampled.map((r) => r.id),
              )
              .execute()
          ).map((r) => r.log_id),
        )
      : new Set<string>();
    const chosen = sampled
      .filter((r) => !already.has(r.id))
      .map((r) => ({ id: r.id, createdAt: r.last_activity_at }));
    const first = Number(locked.next_position);
    const chunks = chosen.length ? await storeSelection(tx, monitor, chosen, first, chunkSize) : [];
    await tx
      .updateTable('monitors')
      .set({ sessions_through: through, next_position: sql`next_position + ${chosen.length}` })
      .where('id', '=', monitor.id)
      .execute();
    return { chunks, more };
  });
}

/**
 * Selects, for every enabled session monitor, the sessions of its container that have been idle for its
 * `idle_seconds` as of `now` and were not considered before. Returns the number of sessions selected.
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
    .select([
      'id',
      'run_id',
      'container_id',
      'environment',
      'sampling_rate',
      'idle_seconds',
      'filter',
      'created_at',
    ])
    .where('enabled', '=', 1)
    .where('unit', '=', 'session')
    .execute();
  let count = 0;
  for (const monitor of monitors) {
    const cutoff = new Date(now - (monitor.idle_seconds ?? 0) * 1000).toISOString();
    for (;;) {
      const step = await sweepStep(db, monitor, cutoff, chunkSize);
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
