import type { Kysely, Selectable } from 'kysely';
import type { Drafted } from '../catalog/datasets/origins.js';
import type { Database } from '../db/schema.js';
import type { AnnotationReviewTable } from '../db/schema-review.js';
import { itemNeeds } from './content.js';
import { contentOf, expectedOf } from './export.js';
import type { ReviewPorts } from './ports.js';
import { queueRubric } from './queues.js';

type Db = Kysely<Database>;

/** The review `id` of the project; or, for an item id (`aqi_…`), the item's first current review. */
async function reviewRow(
  db: Db,
  projectId: string,
  id: string,
): Promise<Selectable<AnnotationReviewTable> | undefined> {
  const q = db
    .selectFrom('annotation_reviews')
    .selectAll()
    .where('project_id', '=', projectId)
    .where('superseded_by', 'is', null);
  const review = id.startsWith('aqi_')
    ? await q.where('item_id', '=', id).orderBy('created_at').orderBy('id').executeTakeFirst()
    : await q.where('id', '=', id).executeTakeFirst();
  if (review) return review;
  // A corrected review stands for the review that corrected it.
  if (id.startsWith('aqi_')) return undefined;
  const old = await db
    .selectFrom('annotation_reviews')
    .select('superseded_by')
    .where('project_id', '=', projectId)
    .where('id', '=', id)
    .executeTakeFirst();
  return old?.superseded_by ? reviewRow(db, projectId, old.superseded_by) : undefined;
}

/**
 * A human review as a dataset item: the reviewed item's input and output (a task log's, a session's
 * last call's, a run sample's), expected = the human answer on the review's evaluator (its label, pass or
 * fail as a boolean, or its score), and the reviewer and comment in the metadata. Reading it needs what
 * showing the reviewed item needs.
 */
export async function reviewDraft(
  { db, sourceKinds }: ReviewPorts,
  projectId: string,
  id: string,
): Promise<Drafted | null> {
  const review = await reviewRow(db, projectId, id);
  if (!review) return null;
  const [item, queue] = await Promise.all([
    db.selectFrom('annotation_items').selectAll().where('id', '=', review.item_id).executeTakeFirst(),
    db.selectFrom('annotation_queues').selectAll().where('id', '=', review.queue_id).executeTakeFirst(),
  ]);
  if (!item || !queue) return null;
  const rubric = await queueRubric(db, queue);
  const ev = rubric.find((e) => e.id === review.evaluator_id);
  const content = await contentOf(db, projectId, item);
  const answer = {
    score: review.score,
    passed: review.passed === null ? null : review.passed === 1,
    label: review.label,
  };
  const expected = ev ? expectedOf(ev, answer) : (review.label ?? review.score ?? review.passed === 1);
  return {
    draft: {
      input: content.input,
      output: content.output,
      expected,
      metadata: {
        ...content.metadata,
        review: {
          id: review.id,
          item_id: review.item_id,
          queue: queue.name,
          evaluator: ev?.name ?? review.evaluator_id,
          reviewer: review.reviewer,
          comment: review.comment,
        },
      },
      origin: { kind: 'review', id: review.id, item_id: review.item_id },
    },
    needs: await itemNeeds(db, sourceKinds, item),
  };
}
