import type { Kysely, Selectable } from 'kysely';
import type { Database, RunSampleTable, RunTable } from '../db/schema.js';
import type { Page } from '../http/schemas.js';
import { parseJson } from '../shared/json.js';
import type { RunStatus } from '../shared/run-status.js';

export type RunRow = Selectable<RunTable> & { container_label: string | null };

function withLabel(db: Kysely<Database>) {
  return db
    .selectFrom('runs')
    .leftJoin('containers', 'containers.id', 'runs.container_id')
    .selectAll('runs')
    .select('containers.label as container_label');
}

/** The one read of a run on a caller's behalf: by id, within the caller's project (else undefined). */
export async function findRun(
  db: Kysely<Database>,
  projectId: string,
  id: string,
): Promise<RunRow | undefined> {
  // A monitor's run is read through its monitor (results, samples), not as an evaluation run.
  return withLabel(db)
    .where('runs.project_id', '=', projectId)
    .where('runs.id', '=', id)
    .where('runs.monitor_id', 'is', null)
    .executeTakeFirst();
}

export async function listRuns(
  db: Kysely<Database>,
  projectId: string,
  filter: { containerId: string | null; status: RunStatus | null; name: string | null },
  page: Page,
): Promise<{ rows: RunRow[]; total: number }> {
  // A monitor's long-lived run is shown through its monitor, not among the evaluation runs.
  let rowsQ = withLabel(db).where('runs.project_id', '=', projectId).where('runs.monitor_id', 'is', null);
  let countQ = db
    .selectFrom('runs')
    .select((eb) => eb.fn.countAll<number | string>().as('n'))
    .where('project_id', '=', projectId)
    .where('monitor_id', 'is', null);
  if (filter.containerId !== null) {
    rowsQ = rowsQ.where('runs.container_id', '=', filter.containerId);
    countQ = countQ.where('container_id', '=', filter.containerId);
  }
  if (filter.name !== null) {
    rowsQ = rowsQ.where('runs.name', '=', filter.name);
    countQ = countQ.where('name', '=', filter.name);
  }
  if (filter.status !== null) {
    rowsQ = rowsQ.where('runs.status', '=', filter.status);
    countQ = countQ.where('status', '=', filter.status);
  }
  const [rows, count] = await Promise.all([
    rowsQ
      .orderBy('runs.created_at', 'desc')
      .orderBy('runs.id', 'desc')
      .limit(page.limit)
      .offset(page.offset)
      .execute(),
    countQ.executeTakeFirstOrThrow(),
  ]);
  return { rows, total: Number(count.n) };
}

export async function listSamples(
  db: Kysely<Database>,
  runId: string,
  filter: { launch?: number; evaluatorId?: string; passed?: boolean; errored?: boolean; status?: string },
  page: Page,
): Promise<{ rows: Selectable<RunSampleTable>[]; total: number }> {
  let q = db.selectFrom('run_samples').where('run_id', '=', runId);
  if (filter.launch !== undefined) q = q.where('launch_index', '=', filter.launch);
  if (filter.evaluatorId !== undefined) q = q.where('evaluator_id', '=', filter.evaluatorId);
  if (filter.passed !== undefined) q = q.where('passed', '=', filter.passed ? 1 : 0);
  if (filter.errored !== undefined) q = q.where('status', filter.errored ? '=' : '<>', 'error');
  if (filter.status !== undefined) q = q.where('status', '=', filter.status);
  const [rows, count] = await Promise.all([
    q
      .selectAll()
      .orderBy('launch_index')
      .orderBy('position')
      .orderBy('evaluator_id')
      .limit(page.limit)
      .offset(page.offset)
      .execute(),
    q.select((eb) => eb.fn.countAll<number | string>().as('n')).executeTakeFirstOrThrow(),
  ]);
  return { rows, total: Number(count.n) };
}

/** Scored samples of a run per launch, evaluator and score value (few distinct scores: one row each). */
export async function scoreCounts(db: Kysely<Database>, runId: string) {
  const rows = await db
    .selectFrom('run_samples')
    .select(['launch_index', 'evaluator_id', 'score', (eb) => eb.fn.countAll<number | string>().as('n')])
    .where('run_id', '=', runId)
    .where('status', '=', 'scored')
    .where('score', 'is not', null)
    .groupBy(['launch_index', 'evaluator_id', 'score'])
    .execute();
  return rows.map((r) => ({
    launch_index: Number(r.launch_index),
    evaluator_id: r.evaluator_id,
    score: Number(r.score),
    n: Number(r.n),
  }));
}

/** Labels of the project's datasets and containers with these ids (a run names its sides by id). */
export async function sideLabels(
  db: Kysely<Database>,
  projectId: string,
  ids: { datasets: string[]; containers: string[] },
): Promise<Record<string, string>> {
  const out: Record<string, string> = {};
  if (ids.datasets.length) {
    const rows = await db
      .selectFrom('datasets')
      .select(['id', 'label'])
      .where('project_id', '=', projectId)
      .where('id', 'in', ids.datasets)
      .execute();
    for (const r of rows) out[r.id] = r.label;
  }
  if (ids.containers.length) {
    const rows = await db
      .selectFrom('containers')
      .select(['id', 'label'])
      .where('project_id', '=', projectId)
      .where('id', 'in', ids.containers)
      .execute();
    for (const r of rows) out[r.id] = r.label;
  }
  return out;
}

/** A scored sample of one item, as a page listing what runs made of that item shows it. */
export interface ItemScore {
  run_id: string;
  evaluator_id: string;
  /** The evaluator's name; its id once it was deleted. */
  evaluator: string;
  score: number | null;
  passed: boolean | null;
  reasoning: string | null;
  created_at: string;
}

/** The scores one item (a task log, a dataset item) got in the project's runs, newest first, at most `limit`. */
export async function scoresOfItem(
  db: Kysely<Database>,
  projectId: string,
  itemId: string,
  limit: number,
): Promise<ItemScore[]> {
  const rows = await db
    .selectFrom('run_samples as s')
    .innerJoin('runs as r', 'r.id', 's.run_id')
    .leftJoin('evaluators as e', 'e.id', 's.evaluator_id')
    .select(['s.run_id', 's.evaluator_id', 'e.name', 's.score', 's.passed', 's.reasoning', 's.created_at'])
    .where('r.project_id', '=', projectId)
    .where('s.item_id', '=', itemId)
    .where('s.status', '=', 'scored')
    .orderBy('s.created_at', 'desc')
    .limit(limit)
    .execute();
  return rows.map((s) => ({
    run_id: s.run_id,
    evaluator_id: s.evaluator_id,
    evaluator: s.name ?? s.evaluator_id,
    score: s.score,
    passed: s.passed === null ? null : s.passed === 1,
    reasoning: s.reasoning,
    created_at: s.created_at,
  }));
}

/** Per evaluator of a run: samples scored, errored and missing, and one missing sample's stored error. */
export interface EvaluatorTally {
  scored: number;
  errors: number;
  missing: number;
  /** The message of a missing sample's error, when one recorded any. */
  missingMessage: string | null;
}

/** How a run's samples ended, per evaluator (evaluators with no sample are absent). */
export async function tallyByEvaluator(
  db: Kysely<Database>,
  runId: string,
): Promise<Map<string, EvaluatorTally>> {
  const rows = await db
    .selectFrom('run_samples')
    .select(['evaluator_id', 'status', (eb) => eb.fn.countAll<number | string>().as('n')])
    .where('run_id', '=', runId)
    .groupBy(['evaluator_id', 'status'])
    .execute();
  const tallies = new Map<string, EvaluatorTally>();
  for (const r of rows) {
    const c = tallies.get(r.evaluator_id) ?? { scored: 0, errors: 0, missing: 0, missingMessage: null };
    if (r.status === 'scored') c.scored += Number(r.n);
    else if (r.status === 'error') c.errors += Number(r.n);
    else if (r.status === 'missing') c.missing += Number(r.n);
    tallies.set(r.evaluator_id, c);
  }
  for (const [id, c] of tallies) {
    if (c.missing === 0) continue;
    const last = await db
      .selectFrom('run_samples')
      .select('error')
      .where('run_id', '=', runId)
      .where('evaluator_id', '=', id)
      .where('status', '=', 'missing')
      .where('error', 'is not', null)
      .limit(1)
      .executeTakeFirst();
    c.missingMessage = parseJson<{ message?: string } | null>(last?.error ?? null, null)?.message ?? null;
  }
  return tallies;
}
