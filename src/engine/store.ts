import { type Kysely, type Selectable, sql, type Updateable } from 'kysely';
import { insertRows } from '../db/bulk.js';
import type { Database, RunChunkTable, RunGenerationTable, RunSampleTable, RunTable } from '../db/schema.js';
import { nowIso } from '../shared/ids.js';

/**
 * The engine's queries. Everything execution knows lives in these tables, so that any process can pick up
 * any step: the run row (status, layout, counters), its launches, its chunks (with leases) and the
 * per-sample rows.
 */

type Db = Kysely<Database>;

export type RunRecord = Pick<
  Selectable<RunTable>,
  | 'id'
  | 'project_id'
  | 'status'
  | 'environment'
  | 'plan'
  | 'layout'
  | 'cancel_requested'
  | 'abandoned'
  | 'created_at'
  | 'started_at'
  | 'finished_at'
>;

export type ChunkRecord = Selectable<RunChunkTable>;
export interface ChunkKey {
  runId: string;
  launch: number;
  chunk: number;
}

export async function findRun(db: Db, id: string): Promise<RunRecord | undefined> {
  return db
    .selectFrom('runs')
    .select([
      'id',
      'project_id',
      'status',
      'environment',
      'plan',
      'layout',
      'cancel_requested',
      'abandoned',
      'created_at',
      'started_at',
      'finished_at',
    ])
    .where('id', '=', id)
    .executeTakeFirst();
}

/** What a chunk checks before it starts: whether the run still runs, and how. */
export async function runFlags(
  db: Db,
  id: string,
): Promise<Pick<RunRecord, 'status' | 'cancel_requested' | 'abandoned'> | undefined> {
  return db
    .selectFrom('runs')
    .select(['status', 'cancel_requested', 'abandoned'])
    .where('id', '=', id)
    .executeTakeFirst();
}

/** Moves a run to a new status only from one of the given ones; returns whether it moved. */
export async function transitionRun(
  db: Db,
  id: string,
  from: readonly string[],
  patch: Updateable<RunTable> & { status: string },
): Promise<boolean> {
  const result = await db
    .updateTable('runs')
    .set(patch)
    .where('id', '=', id)
    .where('status', 'in', from)
    .executeTakeFirst();
  return Number(result.numUpdatedRows) > 0;
}

export async function updateRun(db: Db, id: string, patch: Updateable<RunTable>): Promise<void> {
  await db.updateTable('runs').set(patch).where('id', '=', id).execute();
}

/** What a run's calls cost, by kind: added to the run's counters in one statement. */
export interface UsageDelta {
  calls: number;
  unpriced: number;
  cost: number;
  prompt: number;
  completion: number;
}

export async function addUsage(
  db: Db,
  runId: string,
  delta: { judge: UsageDelta; generation: UsageDelta },
): Promise<void> {
  const { judge: j, generation: g } = delta;
  await db
    .updateTable('runs')
    .set({
      judge_calls: sql`judge_calls + ${j.calls}`,
      judge_unpriced_calls: sql`judge_unpriced_calls + ${j.unpriced}`,
      judge_cost: sql`judge_cost + ${j.cost}`,
      judge_prompt_tokens: sql`judge_prompt_tokens + ${j.prompt}`,
      judge_completion_tokens: sql`judge_completion_tokens + ${j.completion}`,
      generation_calls: sql`generation_calls + ${g.calls}`,
      generation_unpriced_calls: sql`generation_unpriced_calls + ${g.unpriced}`,
      generation_cost: sql`generation_cost + ${g.cost}`,
      generation_prompt_tokens: sql`generation_prompt_tokens + ${g.prompt}`,
      generation_completion_tokens: sql`generation_completion_tokens + ${g.completion}`,
    })
    .where('id', '=', runId)
    .execute();
}

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

export async function countPendingChunks(db: Db, runId: string): Promise<number> {
  const row = await db
    .selectFrom('run_chunks')
    .select((eb) => eb.fn.countAll<number | string>().as('n'))
    .where('run_id', '=', runId)
    .where('status', '=', 'pending')
    .executeTakeFirstOrThrow();
  return Number(row.n);
}

/**
 * Takes the next pending chunk of a running run in one of `environments` whose lease is free or expired,
 * oldest run first and launches interleaved, leased to `owner` until `now + leaseMs`. One statement: on
 * PostgreSQL the candidate row is locked with SKIP LOCKED so concurrent claimers take different chunks;
 * SQLite runs one writer at a time.
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
  const candidates = sql`run_chunks c join runs r on r.id = c.run_id
    where c.status = 'pending' and c.environment in (${sql.join([...environments])})
      and (c.lease_expires_at is null or c.lease_expires_at < ${now})
      and r.status = 'running' and r.cancel_requested = 0`;
  // A read first when idle: an idle executor polls often, and an UPDATE takes the write lock even when
  // it changes nothing (on SQLite, the lock every other writer then waits on).
  if (options.probe) {
    const candidate = await sql<{ n: number }>`select 1 as n from ${candidates} limit 1`.execute(db);
    if (candidate.rows.length === 0) return undefined;
  }
  const lock = skipLocked ? sql`for update of c skip locked` : sql``;
  const result = await sql<ChunkRecord>`
    update run_chunks set owner = ${owner}, lease_expires_at = ${now + leaseMs},
      attempts = attempts + 1, updated_at = ${nowIso()}
    where (run_id, launch_index, chunk_index) = (
      select c.run_id, c.launch_index, c.chunk_index from ${candidates}
      order by r.created_at, c.run_id, c.chunk_index, c.launch_index
      limit 1 ${lock})
    returning *`.execute(db);
  return result.rows[0];
}

const chunkWhere = (k: ChunkKey) =>
  sql`run_id = ${k.runId} and launch_index = ${k.launch} and chunk_index = ${k.chunk}`;

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

/** Marks a chunk done (by whoever finished it: a retried chunk may finish twice, harmlessly). */
export async function completeChunk(db: Db, key: ChunkKey, owner: string): Promise<void> {
  await sql`update run_chunks set status = 'done', owner = ${owner}, lease_expires_at = null,
    updated_at = ${nowIso()} where ${chunkWhere(key)}`.execute(db);
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
 * give-up requested while no pending chunk holds a live lease.
 */
export async function finishableRuns(db: Db, environments: readonly string[]): Promise<string[]> {
  const now = Date.now();
  const rows = await sql<{ id: string }>`
    select r.id from runs r where r.status = 'running' and r.environment in (${sql.join([...environments])})
      and r.layout is not null
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

/**
 * Stores per-sample rows, each once (a position already stored is skipped, never overwritten), and adds the
 * number actually inserted to the run's progress in the same transaction.
 */
export async function insertSamples(db: Db, runId: string, rows: RunSampleTable[]): Promise<number> {
  if (rows.length === 0) return 0;
  return db.transaction().execute(async (tx) => {
    // 25 columns a row: 500 rows stay well under SQLite's bound-parameter limit. The statement text is
    // built once per batch size and reused (see insertRows).
    const inserted = await insertRows(tx, 'run_samples', rows, 500, (batch) =>
      tx
        .insertInto('run_samples')
        .values(batch)
        .onConflict((oc) => oc.columns(['run_id', 'launch_index', 'evaluator_id', 'position']).doNothing()),
    );
    if (inserted > 0) {
      await tx
        .updateTable('runs')
        .set({ done_positions: sql`done_positions + ${inserted}`, progress_at: Date.now() })
        .where('id', '=', runId)
        .execute();
    }
    return inserted;
  });
}

export async function insertGenerations(db: Db, rows: RunGenerationTable[]): Promise<void> {
  if (rows.length === 0) return;
  await db
    .insertInto('run_generations')
    .values(rows)
    .onConflict((oc) => oc.columns(['run_id', 'launch_index', 'side', 'position']).doNothing())
    .execute();
}

/** The (evaluator, position) pairs of a launch already stored within [from, to). */
export async function donePositions(
  db: Db,
  runId: string,
  launch: number,
  from: number,
  to: number,
): Promise<Set<string>> {
  const rows = await db
    .selectFrom('run_samples')
    .select(['evaluator_id', 'position'])
    .where('run_id', '=', runId)
    .where('launch_index', '=', launch)
    .where('position', '>=', from)
    .where('position', '<', to)
    .execute();
  return new Set(rows.map((r) => `${r.evaluator_id}:${r.position}`));
}

export async function storedGenerations(
  db: Db,
  runId: string,
  launch: number,
  side: string,
  from: number,
  to: number,
): Promise<Map<number, Selectable<RunGenerationTable>>> {
  const rows = await db
    .selectFrom('run_generations')
    .selectAll()
    .where('run_id', '=', runId)
    .where('launch_index', '=', launch)
    .where('side', '=', side)
    .where('position', '>=', from)
    .where('position', '<', to)
    .execute();
  return new Map(rows.map((r) => [Number(r.position), r]));
}

// Workers: every executing process registers itself and beats a heartbeat, so that the API can say
// whether a queued run's environment has anyone to execute it.

export async function registerWorker(
  db: Db,
  w: { id: string; environments: string[]; executor: string; host: string; pid: number; concurrency: number },
): Promise<void> {
  await db
    .insertInto('workers')
    .values({
      id: w.id,
      environments: JSON.stringify(w.environments),
      executor: w.executor,
      host: w.host,
      pid: w.pid,
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

/** The run's counters as numbers (PostgreSQL returns bigint columns as text). */
export interface RunCounters {
  done_positions: number;
  total_positions: number;
  judge_calls: number;
  judge_prompt_tokens: number;
  judge_completion_tokens: number;
  judge_unpriced_calls: number;
  judge_cost: number;
  generation_calls: number;
  generation_prompt_tokens: number;
  generation_completion_tokens: number;
  generation_unpriced_calls: number;
  generation_cost: number;
}

export const COUNTER_COLUMNS = [
  'done_positions',
  'total_positions',
  'judge_calls',
  'judge_prompt_tokens',
  'judge_completion_tokens',
  'judge_unpriced_calls',
  'judge_cost',
  'generation_calls',
  'generation_prompt_tokens',
  'generation_completion_tokens',
  'generation_unpriced_calls',
  'generation_cost',
] as const;

export function countersOf(row: Record<(typeof COUNTER_COLUMNS)[number], unknown>): RunCounters {
  const out = {} as RunCounters;
  for (const c of COUNTER_COLUMNS) out[c] = Number(row[c] ?? 0);
  return out;
}

export async function findRunCounters(db: Db, runId: string): Promise<RunCounters | undefined> {
  const row = await db.selectFrom('runs').select(COUNTER_COLUMNS).where('id', '=', runId).executeTakeFirst();
  return row ? countersOf(row) : undefined;
}

/** A chunk that kept failing: left out of the run, which then ends in error. */
export async function failChunk(db: Db, key: ChunkKey): Promise<void> {
  await sql`update run_chunks set status = 'failed', owner = null, lease_expires_at = null,
    updated_at = ${nowIso()} where ${chunkWhere(key)} and status = 'pending'`.execute(db);
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
