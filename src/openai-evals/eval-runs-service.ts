import { createHash } from 'node:crypto';
import type { Kysely } from 'kysely';
import { findContainer } from '../catalog/containers/repository.js';
import { createContainer } from '../catalog/containers/service.js';
import { deleteDataset } from '../catalog/datasets/repository.js';
import type { Database, EvalRunTable } from '../db/schema.js';
import type { EvaluatorSnapshot, PlannedSide, RunPlan } from '../engine/plan.js';
import { launchesOf } from '../engine/plan.js';
import type { ScorerRegistry } from '../engine/scorers/registry.js';
import { createRun, repeatedRun } from '../engine/store/birth.js';
import { checkJudges, checkReads } from '../runs/access.js';
import { stableJson } from '../runs/resolution.js';
import { isTerminal } from '../runs/schemas.js';
import { cancelRun, checkBudget, submitOrExplain } from '../runs/service.js';
import { wrapPythonSource } from '../scoring/graders/python.js';
import type { SubGrader } from '../scoring/graders/schemas.js';
import { ApiError, type ValidationIssue } from '../shared/errors.js';
import { newId, nowIso } from '../shared/ids.js';
import { isObject, type JsonObject, parseJson } from '../shared/json.js';
import { generateSide } from '../sources/generate.js';
import { generatedSide } from '../sources/registry.js';
import { badRequest } from './errors.js';
import { type EvalRunPorts, rowsOf } from './eval-runs-rows.js';

export type { EvalRunPorts };

import { checkedSource, dataSourceIssues, evalRowsKind } from './eval-runs-sources.js';
import { type EvalRunObject, toEvalRun } from './eval-runs-view.js';
import { requireEvalRow } from './evals-service.js';
import { metadataIssues } from './evals-validation.js';
import { resolveGraderModels } from './graders-service.js';

interface Principal {
  projectId: string;
  permissions: readonly string[];
}

/** The container eval runs are recorded under (created on first use). */
async function evalsContainer(db: Kysely<Database>, projectId: string): Promise<string> {
  const found = await findContainer(db, projectId, 'evals');
  if (found) return found.id;
  try {
    return (await createContainer(db, projectId, { label: 'evals' })).id;
  } catch (err) {
    const again = await findContainer(db, projectId, 'evals');
    if (again) return again.id;
    throw err;
  }
}

/** The model a criterion calls (its model grader's, cosine's embeddings model), as the registry says. */
const modelOfCriterion = (scorerKinds: ScorerRegistry, grader: SubGrader): string | null =>
  scorerKinds.capabilitiesOf({ type: grader.type, grader }).model;

/** A criterion as the engine scores it (python graders run as sandboxed code); `model`: the one it calls. */
function snapshotOf(
  evalId: string,
  index: number,
  grader: SubGrader,
  model: string | null,
): EvaluatorSnapshot {
  const threshold = (grader as { pass_threshold?: number }).pass_threshold;
  return {
    id: `${evalId}.${index}`,
    name: grader.name,
    type: grader.type === 'python' ? 'code' : grader.type,
    mode: 'pointwise',
    model,
    prompt: null,
    api: null,
    inference_parameters: {},
    pass_threshold: grader.type === 'python' ? (threshold ?? null) : null,
    source: grader.type === 'python' ? wrapPythonSource(grader.source) : null,
    requirements: [],
    grader,
  };
}

/** Model names as OpenAI code gives them (labels, slugs, bare OpenAI names), resolved once, 400 if not. */
async function resolveNames(
  ports: EvalRunPorts,
  projectId: string,
  names: string[],
  loc: (string | number)[],
) {
  try {
    return await resolveGraderModels(ports, projectId, names);
  } catch (err) {
    if (err instanceof ApiError && err.code === 'bad_request') {
      const issues = (err.details as { issues?: ValidationIssue[] } | null)?.issues ?? [];
      throw badRequest(issues.map((i) => ({ ...i, loc })));
    }
    throw err;
  }
}

/**
 * The run's environment (an Evalgate field beside OpenAI's): which executors run it, as for
 * `POST /v1/evaluation/runs`; `main` when absent.
 */
function environmentIssues(value: unknown, environments: readonly string[]): ValidationIssue[] {
  if (value === undefined || (typeof value === 'string' && environments.includes(value))) return [];
  return [
    {
      loc: ['body', 'environment'],
      msg: `environment must be one of ${environments.map((e) => `'${e}'`).join(', ')}`,
      type: 'enum',
    },
  ];
}

export async function createEvalRun(
  ports: EvalRunPorts,
  principal: Principal,
  evalId: string,
  body: unknown,
  idempotencyKey: string | null = null,
): Promise<EvalRunObject> {
  const { projectId } = principal;
  const { db } = ports.runs;
  const evalRow = await requireEvalRow(db, projectId, evalId);
  const b = isObject(body) ? body : {};
  const issues = [
    ...dataSourceIssues(ports.runs.sourceKinds, b.data_source),
    ...metadataIssues(b.metadata, ['body', 'metadata']),
    ...(b.name !== undefined && typeof b.name !== 'string'
      ? [{ loc: ['body', 'name'], msg: 'name must be a string', type: 'string' }]
      : []),
    ...environmentIssues(b.environment, ports.runs.environments),
  ];
  if (issues.length) throw badRequest(issues);
  const idempotency = {
    key: idempotencyKey,
    requestHash: createHash('sha256')
      .update(stableJson({ eval_id: evalRow.id, body: b }))
      .digest('hex'),
  };
  // A repeated request answers with its run before anything is selected or stored again.
  const repeated = await repeatedRun(db, projectId, idempotency);
  if (repeated) return requireEvalRun(db, projectId, evalRow.id, repeated.id);
  const ds = b.data_source as JsonObject;
  // The rows' source kind, and what reading it needs (stored completions and responses are task logs).
  const rowsKind = evalRowsKind(ports.runs.sourceKinds, ds);
  checkReads(ports.runs, [rowsKind], principal.permissions);
  const criteria = parseJson<SubGrader[]>(evalRow.testing_criteria, []);
  const graderModels = [
    ...new Set(
      criteria.map((c) => modelOfCriterion(ports.runs.scorerKinds, c)).filter((m): m is string => m !== null),
    ),
  ];
  const resolved = await resolveNames(ports, projectId, graderModels, ['body', 'testing_criteria']);
  const genModel =
    typeof ds.model === 'string'
      ? ((await resolveNames(ports, projectId, [ds.model], ['body', 'data_source', 'model'])).get(ds.model) ??
        null)
      : null;
  const checked = checkedSource(ds, genModel);
  const evaluators = criteria.map((c, i) => {
    const name = modelOfCriterion(ports.runs.scorerKinds, c);
    const snap = snapshotOf(evalRow.id, i, c, name);
    const model = name ? resolved.get(name)?.slug : undefined;
    if (model && snap.grader && (snap.grader.type === 'score_model' || snap.grader.type === 'label_model')) {
      snap.grader = { ...snap.grader, model };
      snap.model = model;
    }
    return snap;
  });
  checkJudges(ports.runs, { evaluators }, principal.permissions);
  // Refused before any rows are selected or stored when the budget is already spent.
  await checkBudget(ports.runs, principal, {
    generated: checked.model && checked.request ? 'sample' : null,
    evaluators,
  });
  const config = parseJson<JsonObject>(evalRow.data_source_config, {});
  const runId = newId('run');
  const datasetId = await rowsOf(ports, projectId, rowsKind, checked.source, runId, config);
  const count = Number(
    (await db.selectFrom('datasets').select('item_count').where('id', '=', datasetId).executeTakeFirst())
      ?.item_count ?? 0,
  );
  const range = { start: 0, end: count };
  const rows: PlannedSide = { type: rowsKind.type, ref: datasetId, models: [], range };
  const sample: PlannedSide =
    checked.model && checked.request ? generateSide([checked.model], range, checked.request) : rows;
  const containerId = await evalsContainer(db, projectId);
  const sides = { sample, ground_truth: rows, baseline: null };
  const generated = generatedSide(sides);
  const plan: RunPlan = {
    projectId,
    containerId,
    sides,
    generated,
    launches: launchesOf({ sides, generated }),
    evaluators,
  };
  const name = typeof b.name === 'string' ? b.name : `${evalRow.name || 'eval'} run`;
  const environment = typeof b.environment === 'string' ? b.environment : 'main';
  const link: EvalRunTable = {
    run_id: runId,
    eval_id: evalRow.id,
    project_id: projectId,
    name,
    metadata: b.metadata ? JSON.stringify(b.metadata) : null,
    data_source: JSON.stringify(ds),
    model: typeof ds.model === 'string' ? ds.model : '',
    created_at: nowIso(),
  };
  // The run and its link to the eval are stored together: a repeated request never sees one alone.
  const born = await db.transaction().execute(async (tx) => {
    const stored = await createRun(tx, plan, {
      kind: 'eval',
      id: runId,
      evalId: evalRow.id,
      idempotency,
      environment,
      name,
      metadata: b.metadata ?? null,
      config: { eval_id: evalRow.id, data_source: ds },
      datasetIds: [datasetId],
    });
    if (stored.created) await tx.insertInto('eval_runs').values(link).execute();
    return stored;
  });
  if (!born.created) {
    // Another request with the same key won the race: its run is this request's answer, and the rows
    // this request stored for its own run (not an uploaded file) are not kept.
    if (checked.source.type !== 'file_id') await deleteDataset(db, datasetId);
    return requireEvalRun(db, projectId, evalRow.id, born.run.id);
  }
  await submitOrExplain(ports.runs.queue, runId, environment);
  return requireEvalRun(db, projectId, evalRow.id, runId);
}

export async function findEvalRunRow(db: Kysely<Database>, projectId: string, evalId: string, runId: string) {
  return db
    .selectFrom('eval_runs')
    .selectAll()
    .where('project_id', '=', projectId)
    .where('eval_id', '=', evalId)
    .where('run_id', '=', runId)
    .executeTakeFirst();
}

export async function requireEvalRunRow(
  db: Kysely<Database>,
  projectId: string,
  evalId: string,
  runId: string,
) {
  await requireEvalRow(db, projectId, evalId);
  const link = await findEvalRunRow(db, projectId, evalId, runId);
  if (!link) throw ApiError.notFound('Eval run', runId);
  return link;
}

export async function requireEvalRun(
  db: Kysely<Database>,
  projectId: string,
  evalId: string,
  runId: string,
): Promise<EvalRunObject> {
  return toEvalRun(db, projectId, await requireEvalRunRow(db, projectId, evalId, runId));
}

export async function cancelEvalRun(ports: EvalRunPorts, projectId: string, evalId: string, runId: string) {
  const { db } = ports.runs;
  await requireEvalRunRow(db, projectId, evalId, runId);
  const run = await db.selectFrom('runs').select('status').where('id', '=', runId).executeTakeFirst();
  if (run && !isTerminal(run.status)) await cancelRun(ports.runs, projectId, runId);
  return requireEvalRun(db, projectId, evalId, runId);
}

/** Deletes the eval run: cancelled first when it still runs; its Evalgate run stays in the run history. */
export async function deleteEvalRun(ports: EvalRunPorts, projectId: string, evalId: string, runId: string) {
  const { db } = ports.runs;
  await cancelEvalRun(ports, projectId, evalId, runId);
  await db.deleteFrom('eval_runs').where('run_id', '=', runId).where('project_id', '=', projectId).execute();
  return { object: 'eval.run.deleted', deleted: true, run_id: runId };
}

export async function listEvalRuns(
  db: Kysely<Database>,
  projectId: string,
  evalId: string,
  query: { after?: string; limit?: number; order?: 'asc' | 'desc'; status?: string },
) {
  await requireEvalRow(db, projectId, evalId);
  const limit = query.limit ?? 20;
  const order = query.order ?? 'asc';
  let q = db
    .selectFrom('eval_runs')
    .innerJoin('runs', 'runs.id', 'eval_runs.run_id')
    .selectAll('eval_runs')
    .where('eval_runs.eval_id', '=', evalId)
    .where('eval_runs.project_id', '=', projectId);
  if (query.status !== undefined) q = q.where('runs.status', 'in', STATUS_OF[query.status] ?? []);
  if (query.after !== undefined) q = q.where('eval_runs.run_id', order === 'desc' ? '<' : '>', query.after);
  const links = await q
    .orderBy('eval_runs.run_id', order)
    .limit(limit + 1)
    .execute();
  const data = await Promise.all(links.slice(0, limit).map((l) => toEvalRun(db, projectId, l)));
  return {
    object: 'list' as const,
    data,
    first_id: data[0]?.id ?? null,
    last_id: data.at(-1)?.id ?? null,
    has_more: links.length > limit,
  };
}

/** OpenAI's run statuses over Evalgate's. */
const STATUS_OF: Record<string, ('queued' | 'running' | 'completed' | 'cancelled' | 'error')[]> = {
  queued: ['queued'],
  in_progress: ['running'],
  completed: ['completed'],
  canceled: ['cancelled'],
  failed: ['error'],
};
