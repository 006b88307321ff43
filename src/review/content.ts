import type { Kysely } from 'kysely';
import { contentNeed, type Need } from '../auth/content.js';
import type { Database } from '../db/schema.js';
import { sampleAccessNeeds } from '../runs/access.js';
import type { SourceRegistry } from '../sources/registry.js';

/**
 * What showing a queue's items needs: an item shows what it refers to, so it needs what reading that
 * directly needs (review:* alone never reveals a task log). Declared per item kind: a task log, a
 * session or a tool step (one tool call of a session) needs what the task-log and session routes need; a run's position needs what reading the run's
 * samples needs (evaluation:read, and each side's source: data:read, logs:read).
 */

type Db = Kysely<Database>;

export type ItemKind = 'task_log' | 'session' | 'tool_step' | 'run_sample';

const RUN_SAMPLE: Need = { permission: 'evaluation:read', why: "the item shows a run's sample" };

/** The declared content permission of each kind whose needs do not depend on the item. */
export const CONTENT_OF_KIND: Readonly<Record<Exclude<ItemKind, 'run_sample'>, Need>> = {
  task_log: contentNeed('task_log', 'the item'),
  session: contentNeed('session', 'the item'),
  // A tool step shows its session's conversation up to the call.
  tool_step: contentNeed('session', 'the item'),
};

const BATCH = 500;

/** What showing positions of these runs needs (a run not found needs nothing: it shows nothing). */
export async function runNeeds(
  db: Db,
  sourceKinds: SourceRegistry,
  runIds: readonly string[],
): Promise<Need[]> {
  const ids = [...new Set(runIds)];
  if (ids.length === 0) return [];
  const needs: Need[] = [RUN_SAMPLE];
  for (let i = 0; i < ids.length; i += BATCH) {
    const runs = await db
      .selectFrom('runs')
      .select('plan')
      .where('id', 'in', ids.slice(i, i + BATCH))
      .execute();
    for (const r of runs) needs.push(...sampleAccessNeeds({ sourceKinds }, r.plan));
  }
  return needs;
}

/** What showing one item needs. */
export async function itemNeeds(
  db: Db,
  sourceKinds: SourceRegistry,
  item: { kind: string; run_id: string | null },
): Promise<Need[]> {
  if (item.kind === 'task_log' || item.kind === 'session' || item.kind === 'tool_step')
    return [CONTENT_OF_KIND[item.kind]];
  return runNeeds(db, sourceKinds, item.run_id === null ? [] : [item.run_id]);
}

/**
 * What showing any item of a queue needs (listing, claiming and exporting show whichever comes): the
 * needs of every kind it holds, and of every run whose positions it holds.
 */
export async function queueNeeds(db: Db, sourceKinds: SourceRegistry, queueId: string): Promise<Need[]> {
  const holds = async (kind: ItemKind) =>
    (await db
      .selectFrom('annotation_items')
      .select('id')
      .where('queue_id', '=', queueId)
      .where('kind', '=', kind)
      .limit(1)
      .executeTakeFirst()) !== undefined;
  const needs: Need[] = [];
  for (const kind of ['task_log', 'session', 'tool_step'] as const) {
    if (await holds(kind)) needs.push(CONTENT_OF_KIND[kind]);
  }
  if (!(await holds('run_sample'))) return needs;
  const runs = await db
    .selectFrom('annotation_items')
    .select('run_id')
    .distinct()
    .where('queue_id', '=', queueId)
    .where('kind', '=', 'run_sample')
    .execute();
  return [
    ...needs,
    ...(await runNeeds(
      db,
      sourceKinds,
      runs.flatMap((r) => (r.run_id === null ? [] : [r.run_id])),
    )),
  ];
}
