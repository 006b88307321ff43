import type { Kysely, Selectable } from 'kysely';
import { type Need, requireNeeds } from '../auth/content.js';
import type { Database } from '../db/schema.js';
import type { AnnotationItemTable } from '../db/schema-review.js';
import type { ListResponse, Page } from '../http/schemas.js';
import { findMonitor } from '../monitors/repository.js';
import { ApiError } from '../shared/errors.js';
import { newId, nowIso } from '../shared/ids.js';
import { CONTENT_OF_KIND, runNeeds } from './content.js';
import type { ReviewPorts } from './ports.js';
import type { QueueRow } from './queues.js';
import type { AddItems, Item, ItemRule } from './schemas.js';
import { toolStepRefs } from './tool-step.js';

type Db = Kysely<Database>;
export type ItemRow = Selectable<AnnotationItemTable>;

/** A new item's reference: what it points at, and where a run's position is, when it is one. */
interface Ref {
  kind: 'task_log' | 'session' | 'tool_step' | 'run_sample';
  ref: string;
  run_id: string | null;
  launch_index: number | null;
  position: number | null;
}

const BATCH = 500;

export function toItem(row: ItemRow): Item {
  return {
    object: 'annotation_item',
    id: row.id,
    queue_id: row.queue_id,
    kind: row.kind,
    ref: row.ref,
    run_id: row.run_id,
    launch_index: row.launch_index,
    position: row.position,
    source: row.source,
    state: row.state,
    reviewers_needed: row.needed,
    reviews: row.reviews,
    flag: row.flag,
    created_at: row.created_at,
    updated_at: row.updated_at,
  };
}

export function runSampleRef(run: string, launch: number, position: number): Ref {
  return {
    kind: 'run_sample',
    ref: `${run}/${launch}/${position}`,
    run_id: run,
    launch_index: launch,
    position,
  };
}

/** Stores new items (one per reference, however often it is added); returns how many were new. */
async function insertItems(db: Db, queue: QueueRow, refs: Ref[], source: string): Promise<number> {
  let added = 0;
  for (let i = 0; i < refs.length; i += BATCH) {
    const now = nowIso();
    const rows = refs.slice(i, i + BATCH).map((r) => ({
      id: newId('aqi'),
      queue_id: queue.id,
      ...r,
      source,
      state: 'open',
      needed: queue.reviewers_per_item,
      taken: 0,
      reviews: 0,
      flag: null,
      created_at: now,
      updated_at: now,
    }));
    const result = await db
      .insertInto('annotation_items')
      .values(rows)
      .onConflict((oc) => oc.columns(['queue_id', 'kind', 'ref']).doNothing())
      .executeTakeFirst();
    added += Number(result.numInsertedOrUpdatedRows ?? 0);
  }
  return added;
}

/** The ids of `ids` that are not among `found`, as 422 issues located at `field`. */
function unknownIds(ids: readonly string[], found: Set<string>, field: string, what: string): void {
  const issues = ids.flatMap((id, i) =>
    found.has(id)
      ? []
      : [{ loc: ['body', field, i], msg: `${what} '${id}' not found in this project`, type: 'not_found' }],
  );
  if (issues.length) throw ApiError.validation(issues);
}

async function requireRun(db: Db, projectId: string, runId: string, loc: (string | number)[]): Promise<void> {
  const run = await db
    .selectFrom('runs')
    .select('id')
    .where('id', '=', runId)
    .where('project_id', '=', projectId)
    .executeTakeFirst();
  if (!run) throw ApiError.invalid(loc, `Run '${runId}' not found in this project`, 'not_found');
}

/**
 * The run a rule reads: its `run`, or the run of its `monitor` (a monitor scores the calls it selects as
 * positions of a run of its own, so its failing or sampled calls are chosen as a run's are). Exactly one.
 */
async function ruleRun(db: Db, projectId: string, rule: ItemRule, loc: (string | number)[]): Promise<string> {
  if ((rule.run === undefined) === (rule.monitor === undefined)) {
    throw ApiError.invalid(loc, 'A rule names either a run or a monitor');
  }
  if (rule.run !== undefined) {
    await requireRun(db, projectId, rule.run, [...loc, 'run']);
    return rule.run;
  }
  const ref = rule.monitor ?? '';
  const monitor = await findMonitor(db, projectId, ref);
  if (!monitor)
    throw ApiError.invalid([...loc, 'monitor'], `Monitor '${ref}' not found in this project`, 'not_found');
  return monitor.run_id;
}

/** References given by id, each checked to exist in the project (422 naming the ones that do not). */
async function refsByIds(db: Db, projectId: string, body: AddItems): Promise<Ref[]> {
  const refs: Ref[] = [];
  const logs = [...new Set(body.task_logs ?? [])];
  if (logs.length) {
    const found = await db
      .selectFrom('task_logs')
      .select('id')
      .where('project_id', '=', projectId)
      .where('id', 'in', logs)
      .execute();
    unknownIds(logs, new Set(found.map((r) => r.id)), 'task_logs', 'Task log');
    for (const id of logs)
      refs.push({ kind: 'task_log', ref: id, run_id: null, launch_index: null, position: null });
  }
  const sessions = [...new Set(body.sessions ?? [])];
  if (sessions.length) {
    const found = await db
      .selectFrom('task_logs')
      .select('session_id')
      .distinct()
      .where('project_id', '=', projectId)
      .where('session_id', 'in', sessions)
      .execute();
    unknownIds(sessions, new Set(found.map((r) => r.session_id ?? '')), 'sessions', 'Session');
    for (const id of sessions)
      refs.push({ kind: 'session', ref: id, run_id: null, launch_index: null, position: null });
  }
  for (const ref of await toolStepRefs(db, projectId, body.tool_steps ?? []))
    refs.push({ kind: 'tool_step', ref, run_id: null, launch_index: null, position: null });
  for (const [i, s] of (body.run_samples ?? []).entries()) {
    await requireRun(db, projectId, s.run, ['body', 'run_samples', i, 'run']);
    const launch = s.launch ?? 0;
    const row = await db
      .selectFrom('run_samples')
      .select('position')
      .where('run_id', '=', s.run)
      .where('launch_index', '=', launch)
      .where('position', '=', s.position)
      .executeTakeFirst();
    if (!row) {
      throw ApiError.invalid(
        ['body', 'run_samples', i, 'position'],
        `Run ${s.run} has no scored position ${s.position} in launch ${launch}`,
        'not_found',
      );
    }
    refs.push(runSampleRef(s.run, launch, s.position));
  }
  return refs;
}

/** A 32-bit hash of (seed, run, launch, position): the same share of the same run for the same seed. */
export function shareHash(seed: number, run: string, launch: number, position: number): number {
  let h = (2166136261 ^ seed) >>> 0;
  const text = `${run}/${launch}/${position}`;
  for (let i = 0; i < text.length; i++) {
    h ^= text.charCodeAt(i);
    h = Math.imul(h, 16777619) >>> 0;
  }
  // A final mix, so that neighbouring positions land far apart.
  h ^= h >>> 16;
  h = Math.imul(h, 0x85ebca6b) >>> 0;
  h ^= h >>> 13;
  h = Math.imul(h, 0xc2b2ae35) >>> 0;
  h ^= h >>> 16;
  return h >>> 0;
}

function ruleSource(rule: ItemRule): string {
  const parts: string[] = rule.monitor === undefined ? [] : [`monitor=${rule.monitor}`];
  if (rule.failed) parts.push('failed');
  if (rule.share !== undefined) parts.push(`share=${rule.share}`);
  if (rule.score_min !== undefined || rule.score_max !== undefined) {
    parts.push(`score=${rule.score_min ?? ''}..${rule.score_max ?? ''}`);
  }
  return `rule:${parts.join('+')}`;
}

/**
 * The positions of a run a rule selects (every criterion it gives must hold), read page by page from the
 * run's rows of one evaluator and queued as they are read: a run of any size is never held in memory.
 */
async function addByRule(
  db: Db,
  queue: QueueRow,
  rule: ItemRule & { runId: string },
  evaluatorId: string,
  index: number,
): Promise<{ added: number; matched: number }> {
  const loc = ['body', 'rules', index];
  const { runId } = rule;
  if (
    !rule.failed &&
    rule.share === undefined &&
    rule.score_min === undefined &&
    rule.score_max === undefined
  ) {
    throw ApiError.invalid(loc, 'A rule needs failed, share, score_min or score_max');
  }
  if (rule.score_min !== undefined && rule.score_max !== undefined && rule.score_min > rule.score_max) {
    throw ApiError.invalid([...loc, 'score_min'], 'score_min must not be above score_max');
  }
  const seed = rule.seed ?? 0;
  const bound = rule.share === undefined ? 0 : rule.share * 2 ** 32;
  const source = ruleSource(rule);
  let added = 0;
  let matched = 0;
  let after: { launch: number; position: number } | null = null;
  for (;;) {
    let q = db
      .selectFrom('run_samples')
      .select(['launch_index', 'position'])
      .where('run_id', '=', runId)
      .where('evaluator_id', '=', evaluatorId);
    if (rule.failed) q = q.where('passed', '=', 0);
    if (rule.score_min !== undefined || rule.score_max !== undefined) q = q.where('status', '=', 'scored');
    if (rule.score_min !== undefined) q = q.where('score', '>=', rule.score_min);
    if (rule.score_max !== undefined) q = q.where('score', '<=', rule.score_max);
    if (after) {
      const a = after;
      q = q.where((eb) =>
        eb.or([
          eb('launch_index', '>', a.launch),
          eb.and([eb('launch_index', '=', a.launch), eb('position', '>', a.position)]),
        ]),
      );
    }
    const page = await q
      .orderBy('launch_index')
      .orderBy('position')
      .limit(BATCH * 4)
      .execute();
    if (page.length === 0) break;
    const last = page[page.length - 1]!;
    after = { launch: Number(last.launch_index), position: Number(last.position) };
    const refs = page
      .filter((r) => rule.share === undefined || shareHash(seed, runId, r.launch_index, r.position) < bound)
      .map((r) => runSampleRef(runId, Number(r.launch_index), Number(r.position)));
    matched += refs.length;
    added += await insertItems(db, queue, refs, source);
  }
  return { added, matched };
}

export async function addItems(
  { db, sourceKinds }: ReviewPorts,
  queue: QueueRow,
  rubricFirst: string,
  resolveEvaluator: (ref: string, loc: (string | number)[]) => Promise<string>,
  body: AddItems,
  permissions: readonly string[],
): Promise<{ added: number; already_queued: number }> {
  const rules: (ItemRule & { runId: string })[] = [];
  for (const [i, rule] of (body.rules ?? []).entries()) {
    rules.push({ ...rule, runId: await ruleRun(db, queue.project_id, rule, ['body', 'rules', i]) });
  }
  // Nothing is queued that the caller could not read itself: the queue shows it to whoever claims it.
  const needs: Need[] = [];
  if (body.task_logs?.length) needs.push(CONTENT_OF_KIND.task_log);
  if (body.sessions?.length) needs.push(CONTENT_OF_KIND.session);
  if (body.tool_steps?.length) needs.push(CONTENT_OF_KIND.tool_step);
  const runs = [...(body.run_samples ?? []).map((s) => s.run), ...rules.map((r) => r.runId)];
  requireNeeds(permissions, [...needs, ...(await runNeeds(db, sourceKinds, runs))]);
  const refs = await refsByIds(db, queue.project_id, body);
  const unique = [...new Map(refs.map((r) => [`${r.kind}:${r.ref}`, r])).values()];
  let added = await insertItems(db, queue, unique, 'api');
  let considered = unique.length;
  for (const [i, rule] of rules.entries()) {
    const evaluatorId =
      rule.evaluator === undefined
        ? rubricFirst
        : await resolveEvaluator(rule.evaluator, ['body', 'rules', i, 'evaluator']);
    const r = await addByRule(db, queue, rule, evaluatorId, i);
    added += r.added;
    considered += r.matched;
  }
  return { added, already_queued: considered - added };
}

export async function requireItem(db: Db, queue: QueueRow, itemId: string): Promise<ItemRow> {
  const row = await db
    .selectFrom('annotation_items')
    .selectAll()
    .where('queue_id', '=', queue.id)
    .where('id', '=', itemId)
    .executeTakeFirst();
  if (!row) throw ApiError.notFound('Annotation item', itemId);
  return row;
}

/** One page of a queue's items in the order they were added, counted in the database. */
export async function listItems(
  db: Db,
  queue: QueueRow,
  state: string | undefined,
  page: Page,
): Promise<ListResponse<Item>> {
  let rows = db.selectFrom('annotation_items').selectAll().where('queue_id', '=', queue.id);
  let count = db
    .selectFrom('annotation_items')
    .select((eb) => eb.fn.countAll<number | string>().as('n'))
    .where('queue_id', '=', queue.id);
  if (state !== undefined) {
    rows = rows.where('state', '=', state);
    count = count.where('state', '=', state);
  }
  const [data, total] = await Promise.all([
    rows.orderBy('id').limit(page.limit).offset(page.offset).execute(),
    count.executeTakeFirstOrThrow(),
  ]);
  return { object: 'list', data: data.map(toItem), total: Number(total.n) };
}
