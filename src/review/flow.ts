import type { Kysely } from 'kysely';
import type { Database } from '../db/schema.js';
import { claimNext, remainingFor, skipItem } from './claims.js';
import { type ItemRow, requireItem } from './items.js';
import { type QueueRow, queueRubric } from './queues.js';
import { submitReview } from './reviews.js';
import type { ItemView, Review, SubmitReview } from './schemas.js';
import { viewOf } from './view.js';

type Db = Kysely<Database>;

/**
 * A reviewer's walk through a queue — seeing an item, claiming the next, scoring, skipping, flagging —
 * as one set of steps that every edge serves (the API with a key's reviewer, the dashboard with a
 * signed-in user's). What the caller may read is the edge's to check before calling.
 */

/** An item as this reviewer sees it (the judges' verdicts hidden until they scored it, when asked). */
export function itemFor(
  db: Db,
  queue: QueueRow,
  item: ItemRow,
  reviewer: string,
  hideJudge: boolean,
): Promise<ItemView> {
  const evaluators = JSON.parse(queue.evaluators) as string[];
  return viewOf(db, queue.project_id, item, evaluators, { reviewer, hideJudge });
}

/** Claims the reviewer's next item (null when none is left for them) and says how many remain for them. */
export async function claimFor(
  db: Db,
  queue: QueueRow,
  reviewer: string,
  hideJudge: boolean,
): Promise<{ item: ItemView | null; remaining: number }> {
  const id = await claimNext(db, queue, reviewer);
  const item =
    id === null ? null : await itemFor(db, queue, await requireItem(db, queue, id), reviewer, hideJudge);
  return { item, remaining: await remainingFor(db, queue.id, reviewer) };
}

/** Scores an item on the queue's rubric; the item's state after it (reviewed once enough people did). */
export async function reviewItem(
  db: Db,
  queue: QueueRow,
  itemId: string,
  reviewer: string,
  body: SubmitReview,
): Promise<{ id: string; state: string; reviews: Review[] }> {
  const item = await requireItem(db, queue, itemId);
  const reviews = await submitReview(db, queue, await queueRubric(db, queue), item, reviewer, body);
  return { id: item.id, state: (await requireItem(db, queue, item.id)).state, reviews };
}

/** Skips the reviewer's claimed item, or flags it out of the queue with a reason; the item's state after. */
export async function setAside(
  db: Db,
  queue: QueueRow,
  itemId: string,
  reviewer: string,
  flag: string | null,
): Promise<{ id: string; state: string }> {
  const item = await requireItem(db, queue, itemId);
  await skipItem(db, item, reviewer, flag);
  return { id: item.id, state: (await requireItem(db, queue, item.id)).state };
}

/** The reviewer's current answers on an item (corrected ones left out), one per evaluator scored. */
export async function answersOf(db: Db, itemId: string, reviewer: string) {
  const rows = await db
    .selectFrom('annotation_reviews')
    .select(['evaluator_id', 'score', 'passed', 'label', 'comment'])
    .where('item_id', '=', itemId)
    .where('reviewer', '=', reviewer)
    .where('superseded_by', 'is', null)
    .execute();
  return rows.map((r) => ({ ...r, passed: r.passed === null ? null : r.passed === 1 }));
}

/** A queue's progress per reviewer (sorted): items reviewed, skipped, flagged, and held now. */
export async function queueProgress(db: Db, queueId: string) {
  const rows = await db
    .selectFrom('annotation_assignments')
    .select(['reviewer', 'state', (eb) => eb.fn.countAll<number | string>().as('n')])
    .where('queue_id', '=', queueId)
    .groupBy(['reviewer', 'state'])
    .execute();
  const count = (reviewer: string, state: string) =>
    Number(rows.find((r) => r.reviewer === reviewer && r.state === state)?.n ?? 0);
  return [...new Set(rows.map((r) => r.reviewer))].sort().map((reviewer) => ({
    reviewer,
    reviewed: count(reviewer, 'reviewed'),
    skipped: count(reviewer, 'skipped'),
    flagged: count(reviewer, 'flagged'),
    claimed: count(reviewer, 'claimed'),
  }));
}
