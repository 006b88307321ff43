import type { Kysely } from 'kysely';
import { insertDataset } from '../catalog/datasets/repository.js';
import { toDataset } from '../catalog/datasets/service.js';
import type { Database } from '../db/schema.js';
import { ApiError } from '../shared/errors.js';
import { newId, nowIso } from '../shared/ids.js';
import { parseJson } from '../shared/json.js';
import { scoredItems } from './export-scores.js';
import type { QueueRow, RubricEvaluator } from './queues.js';
import { toolStepContent } from './tool-step.js';

type Db = Kysely<Database>;

/** The human answer as a dataset's `expected`: the label, pass/fail as a bool, or the score. */
export function expectedOf(
  ev: RubricEvaluator,
  r: { score: number | null; passed: boolean | null; label: string | null },
): unknown {
  if (ev.scale.type === 'labels') return r.label;
  if (ev.scale.type === 'pass_fail') return r.passed === true;
  return r.score;
}

/** The item's input and output: the run's row at its position, the tool step, or the task log. */
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
  if (item.kind === 'tool_step') return toolStepContent(db, projectId, item.ref);
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

async function* rowsOf(db: Db, queue: QueueRow, ev: RubricEvaluator): AsyncGenerator<string> {
  for await (const s of scoredItems(db, queue, [ev])) {
    // An open disagreement has no answer that counts yet: settle it first (it is left out until then).
    if (!s.settled) continue;
    const c = await contentOf(db, queue.project_id, s);
    yield JSON.stringify({
      input: c.input,
      output: c.output,
      expected: expectedOf(ev, s.settled),
      metadata: {
        ...c.metadata,
        review: {
          item_id: s.item_id,
          queue: queue.name,
          evaluator: ev.name,
          status: s.status,
          settled: s.settled,
          reviews: s.reviews,
        },
      },
    });
  }
}

/**
 * Exports a queue's reviewed items as a dataset: each item's input and output, the answer that counts on
 * one rubric evaluator as `expected` (the only review's, the one all reviewers gave, or the settled one;
 * an item whose reviewers disagree is left out until settled), and every review (reviewer, answer,
 * comment) with the settled answer in its metadata, so that a revised
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
    description: `Reviewed items of annotation queue '${queue.name}' (expected: the settled human answer on '${ev.name}')`,
    metadata: JSON.stringify({ annotation_queue: queue.id, evaluator: ev.id }),
    item_count: count,
    created_at: now,
    updated_at: now,
  };
  // Read before the dataset's transaction: on SQLite that transaction holds the one connection, so
  // reading through `db` while it runs would wait on itself.
  const rows: string[] = [];
  for await (const line of rowsOf(db, queue, ev)) rows.push(line);
  if (rows.length === 0) {
    throw new ApiError(
      'conflict',
      `Every reviewed item of queue '${queue.name}' has reviewers who disagree on '${ev.name}': settle them first`,
      { queue: queue.id, reason: 'unsettled' },
    );
  }
  row.item_count = rows.length;
  await insertDataset(db, row, rows);
  return toDataset(row);
}
