import type { Kysely, Selectable } from 'kysely';
import type { Database } from '../db/schema.js';
import type { AnnotationReviewTable, AnnotationSettlementTable } from '../db/schema-review.js';
import { ApiError, type ValidationIssue } from '../shared/errors.js';
import { newId, nowIso } from '../shared/ids.js';
import type { ItemRow } from './items.js';
import type { QueueRow, RubricEvaluator } from './queues.js';
import { valueOn } from './reviews.js';
import type { SettleItem } from './schemas-settle.js';

/**
 * Settling a disagreement: where an item's reviewers gave different answers on an evaluator, one answer is
 * made the one that counts — the majority's, one reviewer's, or one given by whoever settles it. Every
 * reviewer's own answer is kept; exports carry them all and the settled one.
 */

type Db = Kysely<Database>;
export type ReviewRow = Selectable<AnnotationReviewTable>;
export type SettlementRow = Selectable<AnnotationSettlementTable>;

/** An answer on a scale: what is compared to tell agreement from disagreement. */
export interface Answer {
  score: number | null;
  passed: number | null;
  label: string | null;
}

/** Where an item stands on one evaluator: one review, all alike, settled, or an open disagreement. */
export type Standing = 'single' | 'unanimous' | 'settled' | 'disagreement';

export interface Outcome {
  status: Standing;
  /** The answer that counts (null while a disagreement is open). */
  answer: Answer | null;
  settlement: SettlementRow | null;
}

/** Two answers are the same when their label, pass/fail and score are. */
function keyOf(a: Answer): string {
  return JSON.stringify([a.label, a.passed, a.score]);
}

/** The answer most reviewers gave, when one answer has more votes than every other; else null. */
export function majorityOf(reviews: readonly Answer[]): Answer | null {
  const votes = new Map<string, { answer: Answer; n: number }>();
  for (const r of reviews) {
    const k = keyOf(r);
    const v = votes.get(k);
    if (v) v.n += 1;
    else votes.set(k, { answer: { score: r.score, passed: r.passed, label: r.label }, n: 1 });
  }
  const ranked = [...votes.values()].sort((a, b) => b.n - a.n);
  if (ranked.length === 0 || (ranked.length > 1 && ranked[0]!.n === ranked[1]!.n)) return null;
  return ranked[0]!.answer;
}

/** An item's standing on an evaluator from its current reviews and its settlement, if any. */
export function outcomeOf(reviews: readonly Answer[], settlement: SettlementRow | null): Outcome {
  if (settlement) return { status: 'settled', answer: settlement, settlement };
  if (reviews.length === 0) return { status: 'disagreement', answer: null, settlement: null };
  const first = reviews[0]!;
  if (reviews.every((r) => keyOf(r) === keyOf(first))) {
    return {
      status: reviews.length === 1 ? 'single' : 'unanimous',
      answer: { score: first.score, passed: first.passed, label: first.label },
      settlement: null,
    };
  }
  return { status: 'disagreement', answer: null, settlement: null };
}

/** The current reviews of an item on one evaluator, oldest first. */
export function currentReviews(db: Db, itemId: string, evaluatorId: string): Promise<ReviewRow[]> {
  return db
    .selectFrom('annotation_reviews')
    .selectAll()
    .where('item_id', '=', itemId)
    .where('evaluator_id', '=', evaluatorId)
    .where('superseded_by', 'is', null)
    .orderBy('id')
    .execute();
}

function conflict(message: string, item: string, reason: string): ApiError {
  return new ApiError('conflict', message, { item, reason });
}

/** The answer a settlement gives, checked: a majority that exists, a review of this item, a value on the scale. */
function settledAnswer(
  ev: RubricEvaluator,
  item: ItemRow,
  reviews: ReviewRow[],
  body: SettleItem,
): { answer: Answer; reviewId: string | null } {
  if (body.method === 'majority') {
    const answer = majorityOf(reviews);
    if (!answer) {
      throw conflict(
        `Item ${item.id} has no majority on '${ev.name}' (a tie); settle it with a review or a value`,
        item.id,
        'no_majority',
      );
    }
    return { answer, reviewId: null };
  }
  if (body.method === 'review') {
    const chosen = reviews.find((r) => r.id === body.review);
    if (!chosen) {
      throw ApiError.invalid(
        ['body', 'review'],
        body.review === undefined
          ? 'review (a current review of this item) is required with method "review"'
          : `Review '${body.review}' is not a current review of item ${item.id} on '${ev.name}'`,
      );
    }
    return {
      answer: { score: chosen.score, passed: chosen.passed, label: chosen.label },
      reviewId: chosen.id,
    };
  }
  const issues: ValidationIssue[] = [];
  const answer = valueOn(ev, body, ['body'], issues);
  if (issues.length) throw ApiError.validation(issues);
  return { answer, reviewId: null };
}

/**
 * Settles an item on one evaluator (a new settlement replaces an earlier one). 409 where the item has no
 * review on it yet, or where a majority is asked for and there is none.
 */
export async function settleItem(
  db: Db,
  queue: QueueRow,
  ev: RubricEvaluator,
  item: ItemRow,
  settledBy: string,
  body: SettleItem,
): Promise<SettlementRow> {
  const reviews = await currentReviews(db, item.id, ev.id);
  if (reviews.length === 0) {
    throw conflict(`Item ${item.id} has no review on '${ev.name}' to settle`, item.id, 'not_reviewed');
  }
  const { answer, reviewId } = settledAnswer(ev, item, reviews, body);
  const row: SettlementRow = {
    id: newId('stl'),
    project_id: queue.project_id,
    queue_id: queue.id,
    item_id: item.id,
    evaluator_id: ev.id,
    score: answer.score,
    passed: answer.passed,
    label: answer.label,
    method: body.method,
    review_id: reviewId,
    comment: body.comment ?? null,
    settled_by: settledBy,
    created_at: nowIso(),
  };
  await db.transaction().execute(async (tx) => {
    await tx
      .deleteFrom('annotation_settlements')
      .where('item_id', '=', item.id)
      .where('evaluator_id', '=', ev.id)
      .execute();
    await tx.insertInto('annotation_settlements').values(row).execute();
  });
  return row;
}

const PAGE = 500;

/**
 * Settles every open disagreement of a queue on one evaluator by majority: items whose reviewers disagree
 * and that are not settled yet. Ties stay open (counted), to be settled one by one.
 */
export async function settleByMajority(
  db: Db,
  queue: QueueRow,
  ev: RubricEvaluator,
  settledBy: string,
): Promise<{ settled: number; ties: number }> {
  let settled = 0;
  let ties = 0;
  let after = '';
  for (;;) {
    const rows = await db
      .selectFrom('annotation_reviews as r')
      .leftJoin('annotation_settlements as s', (j) =>
        j.onRef('s.item_id', '=', 'r.item_id').onRef('s.evaluator_id', '=', 'r.evaluator_id'),
      )
      .select(['r.item_id', 'r.score', 'r.passed', 'r.label'])
      .where('r.queue_id', '=', queue.id)
      .where('r.evaluator_id', '=', ev.id)
      .where('r.superseded_by', 'is', null)
      .where('s.id', 'is', null)
      .where('r.item_id', '>', after)
      .orderBy('r.item_id')
      .orderBy('r.id')
      .limit(PAGE)
      .execute();
    if (rows.length === 0) return { settled, ties };
    // The last item of a full page may go on in the next one: it is read again there, whole.
    const lastItem = rows[rows.length - 1]!.item_id;
    const done = rows.length < PAGE ? rows : rows.filter((r) => r.item_id !== lastItem);
    if (done.length === 0) throw new Error(`item ${lastItem} has more than ${PAGE} current reviews`);
    const byItem = new Map<string, Answer[]>();
    for (const r of done) byItem.set(r.item_id, [...(byItem.get(r.item_id) ?? []), r]);
    for (const [itemId, answers] of byItem) {
      if (outcomeOf(answers, null).status !== 'disagreement') continue;
      const majority = majorityOf(answers);
      if (!majority) {
        ties += 1;
        continue;
      }
      await db
        .insertInto('annotation_settlements')
        .values({
          id: newId('stl'),
          project_id: queue.project_id,
          queue_id: queue.id,
          item_id: itemId,
          evaluator_id: ev.id,
          ...majority,
          method: 'majority',
          review_id: null,
          comment: null,
          settled_by: settledBy,
          created_at: nowIso(),
        })
        .execute();
      settled += 1;
    }
    after = done[done.length - 1]!.item_id;
    if (rows.length < PAGE) return { settled, ties };
  }
}

export function toSettlement(row: SettlementRow, ev: RubricEvaluator) {
  return {
    object: 'annotation_settlement' as const,
    id: row.id,
    queue_id: row.queue_id,
    item_id: row.item_id,
    evaluator_id: row.evaluator_id,
    evaluator: ev.name,
    score: row.score,
    passed: row.passed === null ? null : row.passed === 1,
    label: row.label,
    method: row.method,
    review_id: row.review_id,
    comment: row.comment,
    settled_by: row.settled_by,
    created_at: row.created_at,
  };
}
