import { type Insertable, type Kysely, sql, type Transaction, type Updateable } from 'kysely';
import type { Database, RunTable } from '../../db/schema.js';
import { cachedStatement } from '../../db/statements.js';
import type { ErrorBody } from '../../shared/errors.js';
import { nowIso } from '../../shared/ids.js';
import { LIVE, type RunStatus } from '../../shared/run-status.js';

/**
 * A run's life, with one owner: every write of a run's status, counters and flags is one of the named,
 * guarded transitions below (one SQL statement each), used by `runs/` and `engine/` alike. Nothing
 * else updates the `runs` table (a test scans src/ for it).
 *
 *   queue ─→ queued ─start─→ running ─finish─→ completed | cancelled
 *              │                 └─────fail───→ error
 *              └─cancel─→ cancelled (a run not yet picked up)
 */

type Db = Kysely<Database> | Transaction<Database>;

/** A new run, as stored (its status is the transition's). */
export type NewRun = Omit<Insertable<RunTable>, 'status'>;

/** The error a failed or abandoned run carries. */
export type RunError = ErrorBody;

async function move(
  db: Db,
  id: string,
  from: readonly RunStatus[],
  patch: Updateable<RunTable>,
): Promise<boolean> {
  const result = await db
    .updateTable('runs')
    .set(patch)
    .where('id', '=', id)
    .where('status', 'in', [...from])
    .executeTakeFirst();
  return Number(result.numUpdatedRows) > 0;
}

/**
 * queue: stores a new run as `queued`; false when its idempotency key is already taken in the project
 * (no error is raised, so that a transaction around it goes on). Called only by the birth (`birth.ts`).
 */
export async function queueRun(db: Db, row: NewRun): Promise<boolean> {
  const result = await db
    .insertInto('runs')
    .values({ ...row, status: 'queued' })
    .onConflict((oc) => oc.columns(['project_id', 'idempotency_key']).doNothing())
    .returning('id')
    .executeTakeFirst();
  return result !== undefined;
}

/** start: queued → running, once every chunk exists (a running run with no pending chunk is finished). */
export function startRun(
  db: Db,
  id: string,
  start: { startedAt: string | null; totalPositions: number; processId: string },
): Promise<boolean> {
  const now = nowIso();
  return move(db, id, ['queued'], {
    status: 'running',
    started_at: start.startedAt ?? now,
    total_positions: start.totalPositions,
    process_id: start.processId,
    updated_at: now,
  });
}

/** rename: a run's name, in any status (it changes nothing of its execution). */
export async function renameRun(db: Db, id: string, name: string | null): Promise<void> {
  await db.updateTable('runs').set({ name, updated_at: nowIso() }).where('id', '=', id).execute();
}

/** The cancellation flag, read by every executor between samples; the status is left to them. */
export async function requestCancel(db: Db, id: string): Promise<void> {
  await db
    .updateTable('runs')
    .set({ cancel_requested: 1, updated_at: nowIso() })
    .where('id', '=', id)
    .execute();
}

/** cancel: queued → cancelled, for a run no executor has taken up; false when it was not queued. */
export function cancelQueued(db: Db, id: string): Promise<boolean> {
  const now = nowIso();
  return move(db, id, ['queued'], { status: 'cancelled', finished_at: now, updated_at: now });
}

/** What an ended run keeps: its aggregates, metrics and spend. */
export interface RunOutcome {
  results: unknown;
  metrics: unknown;
  spend: number;
  /** When the run ended: its `finished_at`, the same instant its metrics' duration was measured to. */
  endedAt?: string;
}

/** finish: queued | running → completed | cancelled, with the outcome. Only the first caller ends it. */
export function finishRun(
  db: Db,
  id: string,
  status: 'completed' | 'cancelled',
  outcome: RunOutcome,
): Promise<boolean> {
  const now = outcome.endedAt ?? nowIso();
  return move(db, id, LIVE, {
    status,
    results: JSON.stringify(outcome.results),
    metrics: JSON.stringify(outcome.metrics),
    spend: outcome.spend,
    finished_at: now,
    error_at: null,
    error: null,
    updated_at: now,
  });
}

/** fail: queued | running → error, with the error and the outcome so far. Only the first caller ends it. */
export function failRun(db: Db, id: string, error: RunError, outcome: RunOutcome): Promise<boolean> {
  const now = outcome.endedAt ?? nowIso();
  return move(db, id, LIVE, {
    status: 'error',
    results: JSON.stringify(outcome.results),
    metrics: JSON.stringify(outcome.metrics),
    spend: outcome.spend,
    finished_at: now,
    error_at: now,
    error: JSON.stringify(error),
    updated_at: now,
  });
}

/** Records that the run gives up (rate limits, a scorer that cannot be set up): it then ends in error. */
export async function abandonRun(db: Db, id: string, reason: RunError): Promise<void> {
  await db
    .updateTable('runs')
    .set({ abandoned: JSON.stringify(reason) })
    .where('id', '=', id)
    .execute();
}

/** Fixes the run's layout; the first writer wins (sources that grow, such as task logs, must not give two). */
export async function fixLayout(db: Db, id: string, layout: unknown): Promise<void> {
  await db
    .updateTable('runs')
    .set({ layout: JSON.stringify(layout) })
    .where('id', '=', id)
    .where('layout', 'is', null)
    .execute();
}

/** What a run's calls cost, by kind: added to the run's counters in one statement. */
export interface UsageDelta {
  calls: number;
  unpriced: number;
  cost: number;
  prompt: number;
  completion: number;
}

type Counts = [number, number, number, number, number, number, number, number, number, number];

/** The ten counters of a usage delta, judge then generation, in the order of the statements below. */
const countsOf = ({ judge: j, generation: g }: { judge: UsageDelta; generation: UsageDelta }): Counts => [
  j.calls,
  j.unpriced,
  j.cost,
  j.prompt,
  j.completion,
  g.calls,
  g.unpriced,
  g.cost,
  g.prompt,
  g.completion,
];

const addCounts = (c: readonly unknown[]) => ({
  judge_calls: sql<number>`judge_calls + ${c[0]}`,
  judge_unpriced_calls: sql<number>`judge_unpriced_calls + ${c[1]}`,
  judge_cost: sql<number>`judge_cost + ${c[2]}`,
  judge_prompt_tokens: sql<number>`judge_prompt_tokens + ${c[3]}`,
  judge_completion_tokens: sql<number>`judge_completion_tokens + ${c[4]}`,
  generation_calls: sql<number>`generation_calls + ${c[5]}`,
  generation_unpriced_calls: sql<number>`generation_unpriced_calls + ${c[6]}`,
  generation_cost: sql<number>`generation_cost + ${c[7]}`,
  generation_prompt_tokens: sql<number>`generation_prompt_tokens + ${c[8]}`,
  generation_completion_tokens: sql<number>`generation_completion_tokens + ${c[9]}`,
});

// Run after every chunk: cached statements (db/statements.ts), not rebuilt by Kysely each time. Their
// parameters come in the order the statement places them: the SET clause's, then the run's id.
const addUsageStatement = cachedStatement('runs.addUsage', (db, ...p: [...Counts, string]) =>
  db.updateTable('runs').set(addCounts(p)).where('id', '=', p[10]),
);
const addRowsStatement = cachedStatement(
  'runs.addRows',
  (db, ...p: [done: number, progressAt: number, ...counts: Counts, runId: string]) =>
    db
      .updateTable('runs')
      .set({
        done_positions: sql<number>`done_positions + ${p[0]}`,
        progress_at: p[1],
        ...addCounts(p.slice(2, 12)),
      })
      .where('id', '=', p[12]),
);

export async function addUsage(
  db: Db,
  runId: string,
  delta: { judge: UsageDelta; generation: UsageDelta },
): Promise<void> {
  await addUsageStatement(db, ...countsOf(delta), runId);
}

const NO_USAGE = { calls: 0, unpriced: 0, cost: 0, prompt: 0, completion: 0 };

/**
 * Adds rows newly stored to the run's progress and what their calls cost to its counters, in one
 * statement (inside the transaction that stored them).
 */
export async function addStoredRows(
  db: Db,
  runId: string,
  inserted: number,
  delta: { judge: UsageDelta; generation: UsageDelta } | null,
): Promise<void> {
  if (inserted === 0) {
    if (delta) await addUsage(db, runId, delta);
    return;
  }
  const counts = countsOf(delta ?? { judge: NO_USAGE, generation: NO_USAGE });
  await addRowsStatement(db, inserted, Date.now(), ...counts, runId);
}
