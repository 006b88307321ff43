import type { Kysely } from 'kysely';
import { callFailure } from '../catalog/items.js';
import type { Database } from '../db/schema.js';
import { recordedLabel } from '../scoring/graders/label.js';
import { parseJson } from '../shared/json.js';
import { type ItemRow, toItem } from './items.js';
import type { ItemView } from './schemas.js';
import { toolStepContent } from './tool-step.js';

type Db = Kysely<Database>;

/** Turns of a session shown to a reviewer: enough to read a long agent run, bounded. */
const SESSION_TURNS = 200;

async function contentOf(db: Db, projectId: string, item: ItemRow): Promise<ItemView['content']> {
  if (item.kind === 'run_sample') {
    const row = await db
      .selectFrom('run_samples')
      .select(['input', 'output', 'expected', 'item_id'])
      .where('run_id', '=', item.run_id ?? '')
      .where('launch_index', '=', item.launch_index ?? 0)
      .where('position', '=', item.position ?? 0)
      .executeTakeFirst();
    return {
      input: parseJson(row?.input ?? null, null),
      output: parseJson(row?.output ?? null, null),
      expected: parseJson(row?.expected ?? null, null),
      metadata: null,
      // A position of a run over recorded calls: the call's own failure, whatever the judges said.
      error: row?.item_id ? await recordedFailure(db, projectId, row.item_id) : null,
    };
  }
  if (item.kind === 'tool_step') {
    const step = await toolStepContent(db, projectId, item.ref);
    return { ...step, metadata: step.input === null ? null : step.metadata, expected: null, error: null };
  }
  if (item.kind === 'task_log') {
    const log = await db
      .selectFrom('task_logs')
      .select(['input', 'output', 'metadata', 'status', 'error'])
      .where('project_id', '=', projectId)
      .where('id', '=', item.ref)
      .executeTakeFirst();
    return {
      input: parseJson(log?.input ?? null, null),
      output: log?.output ?? null,
      expected: null,
      metadata: parseJson(log?.metadata ?? null, null),
      error: log ? callFailure({ status: log.status, error: parseJson(log.error, null) }) : null,
    };
  }
  const turns = await db
    .selectFrom('task_logs')
    .select(['id', 'input', 'output', 'created_at', 'status', 'error'])
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
    error: firstFailure(turns),
  };
}

type Failure = ItemView['content']['error'];

/** The first failed call of a session's turns (numbered from 1), or null. */
function firstFailure(turns: readonly { status: string; error: string | null }[]): Failure {
  for (const [i, t] of turns.entries()) {
    const failure = callFailure({ status: t.status, error: parseJson(t.error, null) });
    if (failure) return { code: failure.code, message: `Turn ${i + 1}: ${failure.message}` };
  }
  return null;
}

/**
 * The failure of the recorded call (or session) a run's position was read from, or null: a reviewer
 * is shown that the answer is a failed call's, never a plain answer.
 */
async function recordedFailure(db: Db, projectId: string, itemId: string): Promise<Failure> {
  const log = await db
    .selectFrom('task_logs')
    .select(['status', 'error'])
    .where('project_id', '=', projectId)
    .where('id', '=', itemId)
    .executeTakeFirst();
  if (log) return callFailure({ status: log.status, error: parseJson(log.error, null) });
  const turns = await db
    .selectFrom('task_logs')
    .select(['status', 'error'])
    .where('project_id', '=', projectId)
    .where('session_id', '=', itemId)
    .orderBy('created_at')
    .limit(SESSION_TURNS)
    .execute();
  return firstFailure(turns);
}

/**
 * The judges' verdicts on a run's position, for the rubric's evaluators: an errored position shows its
 * status and error (its score and passed are null), never a pass.
 */
async function judgeOf(db: Db, item: ItemRow, evaluators: string[]): Promise<ItemView['judge']> {
  if (item.kind !== 'run_sample' || evaluators.length === 0) return [];
  const rows = await db
    .selectFrom('run_samples as s')
    .leftJoin('evaluators as e', 'e.id', 's.evaluator_id')
    .select(['s.evaluator_id', 's.status', 's.error', 's.score', 's.passed', 's.reasoning', 's.prompt_hash'])
    .select(['s.extra', 'e.name as evaluator_name'])
    .where('s.run_id', '=', item.run_id ?? '')
    .where('s.launch_index', '=', item.launch_index ?? 0)
    .where('s.position', '=', item.position ?? 0)
    .where('s.evaluator_id', 'in', evaluators)
    .execute();
  return rows.map((r) => ({
    evaluator_id: r.evaluator_id,
    evaluator: r.evaluator_name ?? r.evaluator_id,
    status: r.status,
    label: recordedLabel(r.extra, r.reasoning),
    error: parseJson<{ code: string; message: string } | null>(r.error, null),
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
