import { type Kysely, type Selectable, sql } from 'kysely';
import type { Database } from '../db/schema.js';
import type { AnnotationReviewTable } from '../db/schema-review.js';
import type { ListResponse, Page } from '../http/schemas.js';
import { ApiError, type ValidationIssue } from '../shared/errors.js';
import { newId, nowIso } from '../shared/ids.js';
import { describeScale, scoreOnScale } from '../shared/scale.js';
import { holdForReview } from './claims.js';
import type { ItemRow } from './items.js';
import type { QueueRow, RubricEvaluator } from './queues.js';
import type { CorrectReview, Review, SubmitReview } from './schemas.js';

type Db = Kysely<Database>;
type ReviewRow = Selectable<AnnotationReviewTable>;

/** A human answer on one evaluator's scale, as given. */
interface Given {
  score?: number;
  passed?: boolean;
  label?: string;
}

/** What is stored for one answer: its score, pass/fail and label as the scale defines them. */
interface Value {
  score: number | null;
  passed: number | null;
  label: string | null;
}

export function toReview(row: ReviewRow): Review {
  return {
    object: 'annotation_review',
    id: row.id,
    queue_id: row.queue_id,
    item_id: row.item_id,
    evaluator_id: row.evaluator_id,
    reviewer: row.reviewer,
    score: row.score,
    passed: row.passed === null ? null : row.passed === 1,
    label: row.label,
    comment: row.comment,
    superseded_by: row.superseded_by,
    created_at: row.created_at,
  };
}

/**
 * An answer checked against the evaluator's scale (every problem as a 422 issue under `loc`), with the
 * pass/fail it implies where the evaluator has a threshold or passing labels.
 */
export function valueOn(
  ev: RubricEvaluator,
  given: Given,
  loc: (string | number)[],
  issues: ValidationIssue[],
): Value {
  const scale = ev.scale;
  const bad = (field: string, msg: string) => issues.push({ loc: [...loc, field], msg, type: 'value_error' });
  const want = `evaluator '${ev.name}' scores on ${describeScale(scale)}`;
  switch (scale.type) {
    case 'pass_fail': {
      let passed = given.passed;
      if (given.score !== undefined) {
        if (given.score !== 0 && given.score !== 1)
          bad('score', `score ${given.score} is outside the scale: ${want} (0 or 1)`);
        else if (passed !== undefined && passed !== (given.score === 1))
          bad('passed', 'passed contradicts score');
        passed ??= given.score === 1;
      }
      if (given.label !== undefined) bad('label', `label is not on the scale: ${want}`);
      if (passed === undefined) {
        bad('passed', `passed (true or false) is required: ${want}`);
        return { score: null, passed: null, label: null };
      }
      return { score: passed ? 1 : 0, passed: passed ? 1 : 0, label: null };
    }
    case 'labels': {
      if (given.score !== undefined) bad('score', `score is not on the scale: ${want}`);
      if (given.passed !== undefined) bad('passed', `passed is not on the scale: ${want}`);
      if (given.label === undefined) bad('label', `label is required: ${want}`);
      else if (!scale.labels.includes(given.label))
        bad('label', `label '${given.label}' is outside the scale: ${want}`);
      const label = given.label ?? null;
      const passed =
        label === null || ev.passing_labels === null ? null : ev.passing_labels.includes(label) ? 1 : 0;
      return { score: null, passed, label };
    }
    default: {
      if (given.label !== undefined) bad('label', `label is not on the scale: ${want}`);
      if (given.passed !== undefined) bad('passed', `passed is not on the scale: ${want}; give a score`);
      const score = given.score;
      if (score === undefined) {
        bad('score', `score is required: ${want}`);
        return { score: null, passed: null, label: null };
      }
      if (!scoreOnScale(scale, score)) bad('score', `score ${score} is outside the scale: ${want}`);
      const passed = ev.pass_threshold === null ? null : score >= ev.pass_threshold ? 1 : 0;
      return { score, passed, label: null };
    }
  }
}

/** Submits a reviewer's scores on an item (one human score per rubric evaluator), holding a place on it. */
export async function submitReview(
  db: Db,
  queue: QueueRow,
  rubric: RubricEvaluator[],
  item: ItemRow,
  reviewer: string,
  body: SubmitReview,
): Promise<Review[]> {
  const issues: ValidationIssue[] = [];
  const values: { ev: RubricEvaluator; value: Value }[] = [];
  for (const [i, s] of body.scores.entries()) {
    const ev = rubric.find((e) => e.id === s.evaluator || e.name === s.evaluator);
    if (!ev) {
      issues.push({
        loc: ['body', 'scores', i, 'evaluator'],
        msg: `Evaluator '${s.evaluator}' is not in the queue's rubric (${rubric.map((e) => e.name).join(', ')})`,
        type: 'value_error',
      });
      continue;
    }
    if (values.some((v) => v.ev.id === ev.id)) {
      issues.push({
        loc: ['body', 'scores', i, 'evaluator'],
        msg: `Evaluator '${ev.name}' is scored twice`,
        type: 'value_error',
      });
      continue;
    }
    values.push({ ev, value: valueOn(ev, s, ['body', 'scores', i], issues) });
  }
  if (queue.comment === 0 && body.comment) {
    issues.push({
      loc: ['body', 'comment'],
      msg: "This queue's rubric takes no comment",
      type: 'extra_forbidden',
    });
  }
  if (issues.length) throw ApiError.validation(issues);
  const now = nowIso();
  const rows: ReviewRow[] = values.map(({ ev, value }) => ({
    id: newId('rev'),
    project_id: queue.project_id,
    queue_id: queue.id,
    item_id: item.id,
    evaluator_id: ev.id,
    reviewer,
    ...value,
    comment: body.comment ?? null,
    superseded_by: null,
    created_at: now,
  }));
  await db.transaction().execute(async (tx) => {
    await holdForReview(tx, item, reviewer);
    await tx
      .updateTable('annotation_items')
      .set({
        reviews: sql`reviews + 1`,
        // Both sides read the row as it was: the review being added makes `reviews + 1`.
        state: sql`case when reviews + 1 >= needed then 'done' else state end`,
        updated_at: now,
      })
      .where('id', '=', item.id)
      .execute();
    await tx.insertInto('annotation_reviews').values(rows).execute();
  });
  return rows.map(toReview);
}

export async function requireReview(db: Db, queue: QueueRow, id: string): Promise<ReviewRow> {
  const row = await db
    .selectFrom('annotation_reviews')
    .selectAll()
    .where('queue_id', '=', queue.id)
    .where('id', '=', id)
    .executeTakeFirst();
  if (!row) throw ApiError.notFound('Review', id);
  return row;
}

/**
 * Corrects a review: a new row with the corrected answer (by whoever corrects it), the old one kept and
 * pointing at it. Only the current review of a chain can be corrected (409 otherwise).
 */
export async function correctReview(
  db: Db,
  rubric: RubricEvaluator[],
  current: ReviewRow,
  reviewer: string,
  body: CorrectReview,
): Promise<Review> {
  const ev = rubric.find((e) => e.id === current.evaluator_id);
  if (!ev)
    throw ApiError.invalid(['path', 'review'], "The review's evaluator is no longer in the queue's rubric");
  const issues: ValidationIssue[] = [];
  const value = valueOn(ev, body, ['body'], issues);
  if (issues.length) throw ApiError.validation(issues);
  const row: ReviewRow = {
    ...current,
    id: newId('rev'),
    reviewer,
    ...value,
    comment: body.comment === undefined ? current.comment : body.comment,
    superseded_by: null,
    created_at: nowIso(),
  };
  await db.transaction().execute(async (tx) => {
    const r = await tx
      .updateTable('annotation_reviews')
      .set({ superseded_by: row.id })
      .where('id', '=', current.id)
      .where('superseded_by', 'is', null)
      .executeTakeFirst();
    if (Number(r.numUpdatedRows) !== 1) {
      throw new ApiError(
        'conflict',
        `Review ${current.id} was corrected already (by ${current.superseded_by ?? 'another'}); correct the latest`,
        {
          review: current.id,
        },
      );
    }
    await tx.insertInto('annotation_reviews').values(row).execute();
  });
  return toReview(row);
}

export async function listReviews(
  db: Db,
  queue: QueueRow,
  opts: { item?: string; history?: boolean; reviewer?: string },
  page: Page,
): Promise<ListResponse<Review>> {
  let rows = db.selectFrom('annotation_reviews').where('queue_id', '=', queue.id);
  if (opts.item !== undefined) rows = rows.where('item_id', '=', opts.item);
  if (opts.reviewer !== undefined) rows = rows.where('reviewer', '=', opts.reviewer);
  if (!opts.history) rows = rows.where('superseded_by', 'is', null);
  const [data, total] = await Promise.all([
    rows.selectAll().orderBy('id').limit(page.limit).offset(page.offset).execute(),
    rows.select((eb) => eb.fn.countAll<number | string>().as('n')).executeTakeFirstOrThrow(),
  ]);
  return { object: 'list', data: data.map(toReview), total: Number(total.n) };
}
