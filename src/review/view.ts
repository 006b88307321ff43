import type { Kysely } from 'kysely';
import type { Database } from '../db/schema.js';
import { parseJson } from '../shared/json.js';
import { type ItemRow, toItem } from './items.js';
import type { ItemView } from './schemas.js';

type Db = Kysely<Database>;

/** Turns of a session shown to a reviewer: enough to read a long agent run, bounded. */
const SESSION_TURNS = 200;

async function contentOf(db: Db, projectId: string, item: ItemRow): Promise<ItemView['content']> {
  if (item.kind === 'run_sample') {
    const row = await db
      .selectFrom('run_samples')
      .select(['input', 'output', 'expected'])
      .where('run_id', '=', item.run_id ?? '')
      .where('launch_index', '=', item.launch_index ?? 0)
      .where('position', '=', item.position ?? 0)
      .executeTakeFirst();
    return {
      input: parseJson(row?.input ?? null, null),
      output: parseJson(row?.output ?? null, null),
      expected: parseJson(row?.expected ?? null, null),
      metadata: null,
    };
  }
  if (item.kind === 'task_log') {
    const log = await db
      .selectFrom('task_logs')
      .select(['input', 'output', 'metadata'])
      .where('project_id', '=', projectId)
      .where('id', '=', item.ref)
      .executeTakeFirst();
    return {
      input: parseJson(log?.input ?? null, null),
      output: log?.output ?? null,
      expected: null,
      metadata: parseJson(log?.metadata ?? null, null),
    };
  }
  const turns = await db
    .selectFrom('task_logs')
    .select(['id', 'input', 'output', 'created_at'])
    .where('project_id', '=', projectId)
    .where('session_id', '=', item.ref)
    .orderBy('created_at')
    .limit(SESSION_TURNS)
    .execute();
  return {
    input: turns.map((t) => ({
      task_log_id: t.id,
      input: parseJson(t.input, null),
      created_at: t.created_at,
    })),
    output: turns.map((t) => t.output),
    expected: null,
    metadata: { session_id: item.ref, turns: turns.length },
  };
}

/** The judges' verdicts on a run's position, for the rubric's evaluators. */
async function judgeOf(db: Db, item: ItemRow, evaluators: string[]): Promise<ItemView['judge']> {
  if (item.kind !== 'run_sample' || evaluators.length === 0) return [];
  const rows = await db
    .selectFrom('run_samples')
    .select(['evaluator_id', 'score', 'passed', 'reasoning', 'prompt_hash'])
    .where('run_id', '=', item.run_id ?? '')
    .where('launch_index', '=', item.launch_index ?? 0)
    .where('position', '=', item.position ?? 0)
    .where('evaluator_id', 'in', evaluators)
    .execute();
  return rows.map((r) => ({
    evaluator_id: r.evaluator_id,
    score: r.score,
    passed: r.passed === null ? null : r.passed === 1,
    reasoning: r.reasoning,
    prompt_hash: r.prompt_hash ?? null,
  }));
}

/**
 * What a reviewer sees of an item: what it refers to, the judges' verdicts (null while hidden: blind
 * review shows them only once the reviewer has scored), and the reviewer's own claim.
 */
export async function viewOf(
  db: Db,
  projectId: string,
  item: ItemRow,
  evaluators: string[],
  opts: { reviewer: string; hideJudge: boolean },
): Promise<ItemView> {
  const mine = await db
    .selectFrom('annotation_assignments')
    .select(['state', 'expires_at'])
    .where('item_id', '=', item.id)
    .where('reviewer', '=', opts.reviewer)
    .executeTakeFirst();
  const reviewed = mine?.state === 'reviewed';
  return {
    object: 'annotation_item.view',
    item: toItem(item),
    content: await contentOf(db, projectId, item),
    judge: opts.hideJudge && !reviewed ? null : await judgeOf(db, item, evaluators),
    claim:
      mine?.state === 'claimed'
        ? { reviewer: opts.reviewer, expires_at: new Date(Number(mine.expires_at)).toISOString() }
        : null,
  };
}
