import { type Kysely, type RawBuilder, type Selectable, sql } from 'kysely';
import type { Database, RunChunkTable } from '../db/schema.js';
import { type ChunkKey, chunkWhere } from '../engine/store/chunks.js';
import { nowIso } from '../shared/ids.js';
import { removeWorker } from './workers.js';

/**
 * Chunk leases, the inline executor's way of sharing work through the database alone: a chunk is
 * claimed under a lease (owner, expiry) that the owner's lease keeper extends; a chunk whose owner died
 * is taken over once its lease expires. The BullMQ executor only records who took a chunk.
 */

type Db = Kysely<Database>;

export type ChunkRecord = Selectable<RunChunkTable>;

/**
 * Takes the next pending chunk of a running run in one of `environments` whose lease is free or expired,
 * oldest run first and launches interleaved, leased to `owner` until `now + leaseMs`. One statement: on
 * PostgreSQL the candidate row is locked with SKIP LOCKED so concurrent claimers take different chunks;
 * SQLite runs one writer at a time, and picks the run first so that its chunks are read in claim order
 * from an index rather than sorted (a sort of every pending chunk of the run, at every claim).
 */
export async function claimChunk(
  db: Db,
  owner: string,
  environments: readonly string[],
  leaseMs: number,
  options: { skipLocked: boolean; probe: boolean },
): Promise<ChunkRecord | undefined> {
  const now = Date.now();
  const { skipLocked } = options;
  // The chunks that may be claimed now: the same filter for the probe and the claim.
  const free = (t: RawBuilder<unknown>) => sql`${t}.status = 'pending'
    and ${t}.environment in (${sql.join([...environments])})
    and (${t}.lease_expires_at is null or ${t}.lease_expires_at < ${now})`;
  const candidates = sql`run_chunks c join runs r on r.id = c.run_id
    where ${free(sql`c`)} and r.status = 'running' and r.cancel_requested = 0`;
  // A read first when idle: an idle executor polls often, and an UPDATE takes the write lock even when
  // it changes nothing (on SQLite, the lock every other writer then waits on).
  if (options.probe) {
    const candidate = await sql<{ n: number }>`select 1 as n from ${candidates} limit 1`.execute(db);
    if (candidate.rows.length === 0) return undefined;
  }
  const set = sql`owner = ${owner}, lease_expires_at = ${now + leaseMs}, attempts = attempts + 1,
    updated_at = ${nowIso()}`;
  const result = skipLocked
    ? await sql<ChunkRecord>`
      update run_chunks set ${set}
      where (run_id, launch_index, chunk_index) = (
        select c.run_id, c.launch_index, c.chunk_index from ${candidates}
        order by r.created_at, c.run_id, c.chunk_index, c.launch_index
        limit 1 for update of c skip locked)
      returning *`.execute(db)
    : // One writer at a time (SQLite): the oldest running run with a free chunk, then its first free
      // chunk, read in order from run_chunks_pending_order (migration 017) rather than sorted.
      await sql<ChunkRecord>`
      update run_chunks set ${set}
      where (run_id, launch_index, chunk_index) = (
        select c.run_id, c.launch_index, c.chunk_index from run_chunks c
        where c.run_id = (
          select r.id from runs r where r.status = 'running' and r.cancel_requested = 0
            and exists (select 1 from run_chunks x where x.run_id = r.id and ${free(sql`x`)})
          order by r.created_at, r.id limit 1)
          and ${free(sql`c`)}
        order by c.chunk_index, c.launch_index
        limit 1)
      returning *`.execute(db);
  return result.rows[0];
}

/** Extends the leases `owner` holds; returns the keys it no longer holds (taken over by another worker). */
export async function extendLeases(
  db: Db,
  owner: string,
  keys: ChunkKey[],
  leaseMs: number,
): Promise<ChunkKey[]> {
  if (keys.length === 0) return [];
  const held = await db
    .updateTable('run_chunks')
    .set({ lease_expires_at: Date.now() + leaseMs })
    .where('owner', '=', owner)
    .where('status', '=', 'pending')
    .returning(['run_id', 'launch_index', 'chunk_index'])
    .execute();
  const mine = new Set(held.map((r) => `${r.run_id}:${r.launch_index}:${r.chunk_index}`));
  return keys.filter((k) => !mine.has(`${k.runId}:${k.launch}:${k.chunk}`));
}

/** Records who executes a chunk taken from elsewhere (a BullMQ job), for observability and take-over. */
export async function takeChunk(db: Db, key: ChunkKey, owner: string): Promise<void> {
  await sql`update run_chunks set owner = ${owner}, attempts = attempts + 1, updated_at = ${nowIso()}
    where ${chunkWhere(key)} and status = 'pending'`.execute(db);
}

/** Gives a chunk's lease back (its work was interrupted), so another worker may take it at once. */
export async function releaseChunk(db: Db, key: ChunkKey, owner: string): Promise<void> {
  await sql`update run_chunks set owner = null, lease_expires_at = null, updated_at = ${nowIso()}
    where ${chunkWhere(key)} and owner = ${owner} and status = 'pending'`.execute(db);
}

/** Queued runs of these environments, oldest first. */
export async function queuedRuns(db: Db, environments: readonly string[], limit: number): Promise<string[]> {
  const rows = await db
    .selectFrom('runs')
    .select('id')
    .where('status', '=', 'queued')
    .where('environment', 'in', [...environments])
    .orderBy('created_at')
    .limit(limit)
    .execute();
  return rows.map((r) => r.id);
}

/**
 * Running runs of these environments that can be finalized now: no pending chunk left, or a cancel or a
 * give-up requested while no pending chunk holds a live lease. A monitor's run is ended by its monitor.
 */
export async function finishableRuns(db: Db, environments: readonly string[]): Promise<string[]> {
  const now = Date.now();
  const rows = await sql<{ id: string }>`
    select r.id from runs r where r.status = 'running' and r.environment in (${sql.join([...environments])})
      and r.layout is not null and r.monitor_id is null
      and not exists (select 1 from run_chunks c where c.run_id = r.id and c.status = 'pending'
        and (r.cancel_requested = 0 or (c.lease_expires_at is not null and c.lease_expires_at >= ${now})))
    order by r.created_at limit 20`.execute(db);
  return rows.rows.map((r) => r.id);
}

/** Of these runs, those whose cancellation was requested or that ended. */
export async function stoppedRuns(db: Db, ids: readonly string[]): Promise<string[]> {
  if (ids.length === 0) return [];
  const rows = await db
    .selectFrom('runs')
    .select('id')
    .where('id', 'in', [...ids])
    .where((eb) => eb.or([eb('cancel_requested', '=', 1), eb('status', 'not in', ['queued', 'running'])]))
    .execute();
  return rows.map((r) => r.id);
}

/** A chunk that kept failing: left out of the run, which then ends in error. */
export async function failChunk(db: Db, key: ChunkKey): Promise<void> {
  await sql`update run_chunks set status = 'failed', owner = null, lease_expires_at = null,
    updated_at = ${nowIso()} where ${chunkWhere(key)} and status = 'pending'`.execute(db);
}

/** Owners of pending chunks whose lease is still running. */
export async function leaseHolders(db: Db): Promise<string[]> {
  const rows = await db
    .selectFrom('run_chunks')
    .select('owner')
    .distinct()
    .where('status', '=', 'pending')
    .where('owner', 'is not', null)
    .where('lease_expires_at', '>=', Date.now())
    .execute();
  return rows.map((r) => r.owner ?? '').filter(Boolean);
}

/** Gives back every lease of a dead owner at once, instead of waiting for them to expire. */
export async function releaseOwner(db: Db, owner: string): Promise<void> {
  await sql`update run_chunks set owner = null, lease_expires_at = null, updated_at = ${nowIso()}
    where owner = ${owner} and status = 'pending'`.execute(db);
  await removeWorker(db, owner);
}
