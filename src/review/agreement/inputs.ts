import type { Kysely } from 'kysely';
import type { Database } from '../../db/schema.js';
import type { EvaluatorRow } from '../../evaluators/repository.js';
import { scaleOf } from '../../evaluators/scale.js';
import { ApiError } from '../../shared/errors.js';
import type { AgreementInput } from './compute.js';
import { reviewerAnswers, reviewPairs, runPairs } from './pairs.js';

type Db = Kysely<Database>;

/** Where the human answers come from: current reviews (optionally of one queue), or a run's `expected`. */
export interface AgreementSource {
  queueId: string | null;
  runId: string | null;
}

/** Bootstrap resamples unless asked otherwise, and the most one request may ask for. */
export const DEFAULT_RESAMPLES = 1000;
export const MAX_RESAMPLES = 10_000;
/** A bootstrap with fewer resamples than this is not worth its cost: intervals are then left out. */
const MIN_RESAMPLES = 100;
/**
 * The most work one request may ask for, in pairs × resamples (10,000 resamples over 2,000 pairs; about
 * half a minute on one thread): it bounds how long a statistics thread stays taken by one request.
 */
export const MAX_WORK = 20_000_000;

/**
 * The resamples a request gets over `pairs` pairs: the ones it asked for (422 where that is more work
 * than MAX_WORK), else the default, lowered to what MAX_WORK allows (none under MIN_RESAMPLES).
 */
export function resamplesFor(requested: number | undefined, pairs: number): number {
  const most = pairs === 0 ? MAX_RESAMPLES : Math.min(MAX_RESAMPLES, Math.floor(MAX_WORK / pairs));
  if (requested === undefined) {
    const fitting = Math.min(DEFAULT_RESAMPLES, most);
    return fitting >= MIN_RESAMPLES ? fitting : 0;
  }
  if (requested > most) {
    throw ApiError.invalid(
      ['query', 'resamples'],
      `At most ${most} resamples over ${pairs} pairs (pairs × resamples may be at most ${MAX_WORK})`,
      'less_than_equal',
    );
  }
  return requested;
}

/**
 * What the figures of these evaluators over this source depend on, as a string that changes when it does:
 * each evaluator's scale and threshold (its `updated_at`), and the reviews (their count and newest id: a
 * new review, a correction or a deleted queue changes it) or the run's scored rows and status.
 */
export async function dataVersion(
  db: Db,
  projectId: string,
  evaluators: EvaluatorRow[],
  source: AgreementSource,
): Promise<string> {
  const ids = evaluators.map((e) => e.id);
  const settings = evaluators.map((e) => [e.id, e.updated_at, e.scale, e.pass_threshold]);
  if (source.runId !== null) {
    const rows = await db
      .selectFrom('run_samples')
      .select((eb) => eb.fn.countAll<number | string>().as('n'))
      .where('run_id', '=', source.runId)
      .where('evaluator_id', 'in', ids)
      .executeTakeFirst();
    const run = await db
      .selectFrom('runs')
      .select('status')
      .where('id', '=', source.runId)
      .executeTakeFirst();
    return JSON.stringify([settings, String(rows?.n ?? 0), run?.status ?? null]);
  }
  const reviews = await db
    .selectFrom('annotation_reviews')
    .select((eb) => [eb.fn.countAll<number | string>().as('n'), eb.fn.max('id').as('last')])
    .where('project_id', '=', projectId)
    .where('evaluator_id', 'in', ids)
    .executeTakeFirst();
  return JSON.stringify([settings, String(reviews?.n ?? 0), reviews?.last ?? null]);
}

/** One evaluator's pairs (and, over reviews, its reviewer pairs), read in the main thread. */
export async function readInput(
  db: Db,
  projectId: string,
  ev: EvaluatorRow,
  source: AgreementSource,
): Promise<AgreementInput> {
  const scale = scaleOf(ev);
  if (source.runId !== null) {
    return { scale, pairs: await runPairs(db, source.runId, ev.id, scale, ev.pass_threshold), people: null };
  }
  return {
    scale,
    pairs: await reviewPairs(db, projectId, ev.id, source.queueId),
    people: await reviewerAnswers(db, projectId, ev.id, source.queueId),
  };
}
