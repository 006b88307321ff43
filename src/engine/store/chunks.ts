import { type Kysely, sql } from 'kysely';
import type { Database, RunChunkTable } from '../../db/schema.js';
import { cachedStatement } from '../../db/statements.js';
import { nowIso } from '../../shared/ids.js';

/** A run's launches (with their call ids) and chunks: what `prepareRun` fixes and chunks complete. */

type Db = Kysely<Database>;

export interface ChunkKey {
  runId: string;
  launch: number;
  chunk: number;
}

export const chunkWhere = (k: ChunkKey) =>
  sql`run_id = ${k.runId} and launch_index = ${k.launch} and chunk_index = ${k.chunk}`;

export async function insertLaunches(
  db: Db,
  rows: { run_id: string; launch_index: number; model: string | null; call_id: string }[],
): Promise<void> {
  if (rows.length === 0) return;
  await db
    .insertInto('run_launches')
    .values(rows)
    .onConflict((oc) => oc.columns(['run_id', 'launch_index']).doNothing())
    .execute();
}

export async function launchCallIds(db: Db, runId: string): Promise<Map<number, string>> {
  const rows = await db
    .selectFrom('run_launches')
    .select(['launch_index', 'call_id'])
    .where('run_id', '=', runId)
    .execute();
  return new Map(rows.map((r) => [Number(r.launch_index), r.call_id]));
}

export async function insertChunks(db: Db, rows: RunChunkTable[]): Promise<void> {
  for (let i = 0; i < rows.length; i += 500) {
    await db
      .insertInto('run_chunks')
      .values(rows.slice(i, i + 500))
      .onConflict((oc) => oc.columns(['run_id', 'launch_index', 'chunk_index']).doNothing())
      .execute();
  }
}

// Run after every chunk: cached statements (db/statements.ts).
const markDone = cachedStatement(
  'run_chunks.done',
  (_db, owner: string, updatedAt: string, runId: string, launch: number, chunk: number) =>
    sql`update run_chunks set status = 'done', owner = ${owner}, lease_expires_at = null,
      updated_at = ${updatedAt} where ${chunkWhere({ runId, launch, chunk })}`,
);

/** Marks a chunk done (by whoever finished it: a retried chunk may finish twice, harmlessly). */
export async function markChunkDone(db: Db, key: ChunkKey, owner: string): Promise<void> {
  await markDone(db, owner, nowIso(), key.runId, key.launch, key.chunk);
}

const pendingRead = cachedStatement(
  'run_chunks.pending',
  (_db, runId: string) => sql<{ status: string; pending: number | boolean; monitor_id: string | null }>`
    select r.status, r.monitor_id,
      exists (select 1 from run_chunks c where c.run_id = r.id and c.status = 'pending') as pending
    from runs r where r.id = ${runId}`,
);

/**
 * The run's status, whether any of its chunks is still pending and whether it is a monitor's long-lived
 * run, in one read (undefined: no such run). `exists` stops at the first pending chunk: asked after every
 * chunk, a count would read all of the run's pending chunks each time.
 */
export async function pendingOf(
  db: Db,
  runId: string,
): Promise<{ status: string; pending: boolean; monitor: boolean } | undefined> {
  const row = (await pendingRead(db, runId)).rows[0];
  return row
    ? { status: row.status, pending: Boolean(row.pending), monitor: row.monitor_id !== null }
    : undefined;
}

/** Chunks of the run that are not done (pending or failed). */
export async function countUnfinishedChunks(db: Db, runId: string): Promise<number> {
  const row = await db
    .selectFrom('run_chunks')
    .select((eb) => eb.fn.countAll<number | string>().as('n'))
    .where('run_id', '=', runId)
    .where('status', '<>', 'done')
    .executeTakeFirstOrThrow();
  return Number(row.n);
}
