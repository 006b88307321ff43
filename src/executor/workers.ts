import type { Kysely } from 'kysely';
import type { Database } from '../db/schema.js';
import { nowIso } from '../shared/ids.js';

/**
 * The worker registry: every executing process registers itself and beats a heartbeat, so that the API
 * can say whether a queued run's environment has anyone to execute it.
 */

type Db = Kysely<Database>;

export interface WorkerEntry {
  id: string;
  environments: string[];
  executor: 'inline' | 'bullmq';
  host: string;
  concurrency: number;
}

export async function registerWorker(db: Db, w: WorkerEntry): Promise<void> {
  await db
    .insertInto('workers')
    .values({
      id: w.id,
      environments: JSON.stringify(w.environments),
      executor: w.executor,
      host: w.host,
      pid: process.pid,
      concurrency: w.concurrency,
      started_at: nowIso(),
      heartbeat_at: Date.now(),
    })
    .onConflict((oc) => oc.column('id').doUpdateSet({ heartbeat_at: Date.now() }))
    .execute();
}

export async function heartbeatWorker(db: Db, id: string): Promise<void> {
  await db.updateTable('workers').set({ heartbeat_at: Date.now() }).where('id', '=', id).execute();
}

export async function removeWorker(db: Db, id: string): Promise<void> {
  await db.deleteFrom('workers').where('id', '=', id).execute();
}

/** Workers whose heartbeat is younger than `ttlMs` that serve `environment`. */
export async function liveWorkers(
  db: Db,
  environment: string,
  ttlMs: number,
): Promise<{ id: string; executor: string; host: string }[]> {
  const rows = await db
    .selectFrom('workers')
    .select(['id', 'executor', 'host', 'environments'])
    .where('heartbeat_at', '>=', Date.now() - ttlMs)
    .execute();
  return rows.filter((r) => (JSON.parse(r.environments) as string[]).includes(environment));
}
