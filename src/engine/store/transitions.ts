import { type Insertable, type Kysely, sql, type Transaction, type Updateable } from 'kysely';
import { isUniqueViolation } from '../../db/database.js';
import type { Database, RunTable } from '../../db/schema.js';
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

/** queue: stores a new run as `queued`; false when its idempotency key is already taken in the project. */
export async function queueRun(db: Db, row: NewRun): Promise<boolean> {
  try {
    await db
      .insertInto('runs')
      .values({ ...row, status: 'queued' })
      .execute();
    return true;
  } catch (err) {
    if (isUniqueViolation(err) && row.idempotency_key !== null) return false;
    throw err;
  }
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
}

/** finish: queued | running → completed | cancelled, with the outcome. Only the first caller ends it. */
export function finishRun(
  db: Db,
  id: string,
  status: 'completed' | 'cancelled',
  outcome: RunOutcome,
): Promise<boolean> {
  const now = nowIso();
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
  const now = nowIso();
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

/** Adds positions newly stored to the run's progress (inside the transaction that stored them). */
export async function addDonePositions(db: Db, runId: string, inserted: number): Promise<void> {
  await db
    .updateTable('runs')
    .set({ done_positions: sql`done_positions + ${inserted}`, progress_at: Date.now() })
    .where('id', '=', runId)
    .execute();
}
