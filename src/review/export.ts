import type { Kysely } from 'kysely';
import { insertDataset } from '../catalog/datasets/repository.js';
import { toDataset } from '../catalog/datasets/service.js';
import type { Database } from '../db/schema.js';
import { ApiError } from '../shared/errors.js';
import { newId, nowIso } from '../shared/ids.js';
import { parseJson } from '../shared/json.js';
import type { QueueRow, RubricEvaluator } from './queues.js';

type Db = Kysely<Database>;

const PAGE = 1000;

/** The human answer as a dataset's `expected`: the label, pass/fail as a bool, or the score. */
export function expectedOf(
  ev: RubricEvaluator,
  r: { score: number | null; passed: number | null; label: string | null },
): unknown {
  if (ev.scale.type === 'labels') return r.label;
  if (ev.scale.type === 'pass_fail') return r.passed === 1;
  return r.score;
}

/** The item's input and output: the run's row at its position, or the task log. */
export async function contentOf(
  db: Db,
  projectId: string,
  item: {
    kind: string;
    ref: string;
    run_id: string | null;
    launch_index: number | null;
    position: number | null;
  },
) {
  if (item.kind === 'run_sample') {
    const row = await db
      .selectFrom('run_samples')
      .select(['input', 'output'])
      .where('run_id', '=', item.run_id ?? '')
      .where('launch_index', '=', item.launch_index ?? 0)
      .where('position', '=', item.position ?? 0)
      .executeTakeFirst();
    return {
      input: parseJson(row?.input ?? null, null),
      output: parseJson(row?.output ?? null, null),
      metadata: {},
    };
  }
  const log = await db
    .selectFrom('task_logs')
    .select(['input', 'output', 'metadata'])
    .where('project_id', '=', projectId)
    .where(item.kind === 'task_log' ? 'id' : 'session_id', '=', item.ref)
    .orderBy('created_at', 'desc')
    .executeTakeFirst();
  return {
    input: parseJson(log?.input ?? null, null),
    output: log?.output ?? null,
    metadata: parseJson<Record<string, unknown>>(log?.metadata ?? null, {}),
  };
}

/** The current reviews of one evaluator in a queue, one per item (its first reviewer's), in pages. */
function reviewedPage(db: Db, queueId: string, evaluatorId: string, after: string) {
  return db
    .selectFrom('annotation_reviews as r')
    .innerJoin('annotation_items as i', 'i.id', 'r.item_id')
    .select(['r.id', 'r.item_id', 'r.reviewer', 'r.score', 'r.passed', 'r.label', 'r.comment'])
    .select(['i.kind', 'i.ref', 'i.run_id', 'i.launch_index', 'i.position'])
    .where('r.queue_id', '=', queueId)
    .where('r.evaluator_id', '=', evaluatorId)
    .where('r.superseded_by', 'is', null)
    .where('r.item_id', '>', after)
    .orderBy('r.item_id')
    .orderBy('r.id')
    .limit(PAGE)
    .execute();
}

async function* rowsOf(db: Db, queue: QueueRow, ev: RubricEvaluator): AsyncGenerator<string> {
  let after = '';
  for (;;) {
    const page = await reviewedPage(db, queue.id, ev.id, after);
    if (page.length === 0) return;
    for (const r of page) {
      if (r.item_id === after) continue; // a second reviewer of the same item: the first one's answer counts
      after = r.item_id;
      const c = await contentOf(db, queue.project_id, r);
      yield JSON.stringify({
        input: c.input,
        output: c.output,
        expected: expectedOf(ev, r),
        metadata: {
          ...c.metadata,
          review: {
            id: r.id,
            item_id: r.item_id,
            reviewer: r.reviewer,
            comment: r.comment,
            queue: queue.name,
            evaluator: ev.name,
          },
        },
      });
    }
  }
}

/**
 * Exports a queue's reviewed items as a dataset: each item's input and output, the human answer on one
 * rubric evaluator as `expected`, and the review (reviewer, comment) in its metadata, so that a revised
 * judge can be run over exactly these items and its agreement measured (`?run=`).
 */
export async function exportReviewed(db: Db, queue: QueueRow, ev: RubricEvaluator, label: string) {
  const counted = await db
    .selectFrom('annotation_reviews')
    .select((eb) => eb.fn.count<number | string>('item_id').distinct().as('n'))
    .where('queue_id', '=', queue.id)
    .where('evaluator_id', '=', ev.id)
    .where('superseded_by', 'is', null)
    .executeTakeFirstOrThrow();
  const count = Number(counted.n);
  if (count === 0)
    throw new ApiError('conflict', `Queue '${queue.name}' has no reviews on '${ev.name}' to export`, {
      queue: queue.id,
    });
  const now = nowIso();
  const row = {
    id: newId('ds'),
    project_id: queue.project_id,
    label,
    description: `Reviewed items of annotation queue '${queue.name}' (expected: the human answer on '${ev.name}')`,
    metadata: JSON.stringify({ annotation_queue: queue.id, evaluator: ev.id }),
    item_count: count,
    created_at: now,
    updated_at: now,
  };
  // Read before the dataset's transaction: on SQLite that transaction holds the one connection, so
  // reading through `db` while it runs would wait on itself.
  const rows: string[] = [];
  for await (const line of rowsOf(db, queue, ev)) rows.push(line);
  row.item_count = rows.length;
  await insertDataset(db, row, rows);
  return toDataset(row);
}
