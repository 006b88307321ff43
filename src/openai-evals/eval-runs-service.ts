import type { Kysely } from 'kysely';
import { findContainer } from '../catalog/containers/repository.js';
import { createContainer } from '../catalog/containers/service.js';
import { createDataset, type DatasetContext } from '../catalog/datasets/service.js';
import type { ResolvedModel } from '../catalog/models/types.js';
import type { Database, EvalRunTable } from '../db/schema.js';
import type { EvaluatorSnapshot, PlannedSide, RunPlan } from '../engine/plan.js';
import { launchesOf } from '../engine/plan.js';
import { queueRun } from '../engine/store/transitions.js';
import { modelOfGrader } from '../evaluators/graders.js';
import { checkJudges } from '../runs/access.js';
import type { RunContext } from '../runs/context.js';
import { isTerminal } from '../runs/schemas.js';
import { cancelRun } from '../runs/service.js';
import { wrapPythonSource } from '../scoring/graders/python.js';
import type { SubGrader } from '../scoring/graders/schemas.js';
import { ApiError, type ValidationIssue } from '../shared/errors.js';
import { newId, nowIso } from '../shared/ids.js';
import { isObject, type JsonObject, parseJson } from '../shared/json.js';
import { badRequest } from './errors.js';
import { checkedSource, dataSourceIssues } from './eval-runs-sources.js';
import { type EvalRunObject, toEvalRun } from './eval-runs-view.js';
import { requireEvalRow } from './evals-service.js';
import { itemChecker, metadataIssues } from './evals-validation.js';
import { requireFile } from './files-service.js';
import { resolveGraderModels } from './graders-service.js';
import { type StoredCompletionFilter, selectStoredCompletions } from './stored-completions-repository.js';

/** What eval runs need: the run rules (queue, environments), uploads for inline rows, model resolution. */
export interface EvalRunPorts {
  runs: RunContext;
  uploads: DatasetContext;
  resolveModel(projectId: string, ref: string): Promise<ResolvedModel>;
  /** Waits for the task-log writer's pending batch, so calls answered a moment ago are selectable. */
  flushLogs(): Promise<void>;
}

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

/** A criterion as the engine scores it (python graders run as sandboxed code). */
function snapshotOf(evalId: string, index: number, grader: SubGrader): EvaluatorSnapshot {
  const threshold = (grader as { pass_threshold?: number }).pass_threshold;
  return {
    id: `${evalId}.${index}`,
    name: grader.name,
    type: grader.type === 'python' ? 'code' : grader.type,
    mode: 'pointwise',
    model: modelOfGrader(grader),
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

/** Inline rows checked against the eval's item schema: 400 naming the first problems. */
function checkItems(schema: unknown, rows: JsonObject[]): void {
  if (!isObject(schema)) return;
  const check = itemChecker(schema);
  const issues: ValidationIssue[] = [];
  rows.forEach((row, i) => {
    if (issues.length >= 5) return;
    for (const msg of check(row.item).slice(0, 2)) {
      issues.push({
        loc: ['body', 'data_source', 'source', 'content', i, 'item'],
        msg: `does not match the eval's item_schema: ${msg}`,
        type: 'item_schema',
      });
    }
  });
  if (issues.length) throw badRequest(issues);
}

/**
 * Stored completions selected by the source's filters (and the eval's config metadata) as eval rows:
 * `item` the request (`input` messages, `metadata`, `model`), `sample` the stored answer. The selection
 * is taken when the run is created.
 */
async function storedRows(
  ports: EvalRunPorts,
  projectId: string,
  source: JsonObject,
  evalFilter: Record<string, string>,
): Promise<JsonObject[]> {
  const num = (v: unknown) => (typeof v === 'number' ? v : undefined);
  const filter: StoredCompletionFilter & { limit?: number } = {
    metadata: { ...evalFilter, ...((source.metadata as Record<string, string> | null) ?? {}) },
  };
  if (typeof source.model === 'string') filter.model = source.model;
  const after = num(source.created_after);
  const before = num(source.created_before);
  const limit = num(source.limit);
  if (after !== undefined) filter.createdAfter = after;
  if (before !== undefined) filter.createdBefore = before;
  if (limit !== undefined) filter.limit = limit;
  await ports.flushLogs();
  const found = await selectStoredCompletions(ports.runs.db, projectId, filter);
  return found.map((c) => ({
    item: { id: c.id, input: c.input, metadata: c.metadata, model: c.model },
    sample: {
      id: c.id,
      object: 'chat.completion',
      model: c.model,
      choices: [
        {
          index: 0,
          message: {
            role: 'assistant',
            content: c.output.content,
            ...(c.output.tool_calls ? { tool_calls: c.output.tool_calls } : {}),
          },
          finish_reason: c.output.finish_reason,
        },
      ],
      usage: c.usage,
    },
  }));
}

async function rowsOf(
  ports: EvalRunPorts,
  projectId: string,
  source: JsonObject,
  runId: string,
  evalFilter: Record<string, string>,
) {
  if (source.type === 'file_id') {
    const file = await requireFile(ports.runs.db, projectId, String(source.id)).catch((err: unknown) => {
      if (err instanceof ApiError && err.code === 'not_found') {
        throw badRequest([
          { loc: ['body', 'data_source', 'source', 'id'], msg: `No file '${source.id}'`, type: 'not_found' },
        ]);
      }
      throw err;
    });
    return file.id;
  }
  if (source.type === 'stored_completions') {
    const rows = await storedRows(ports, projectId, source, evalFilter);
    return (await createDataset(ports.uploads, projectId, { label: `eval-run:${runId}`, items: rows })).id;
  }
  if (source.type !== 'file_content') {
    throw badRequest([
      {
        loc: ['body', 'data_source', 'source', 'type'],
        msg: `${String(source.type)} sources are not served yet: give file_content or file_id`,
        type: 'not_supported',
      },
    ]);
  }
  const rows = source.content as JsonObject[];
  const ds = await createDataset(ports.uploads, projectId, { label: `eval-run:${runId}`, items: rows });
  return ds.id;
}

export async function createEvalRun(
  ports: EvalRunPorts,
  principal: Principal,
  evalId: string,
  body: unknown,
): Promise<EvalRunObject> {
  const { projectId } = principal;
  const { db } = ports.runs;
  const evalRow = await requireEvalRow(db, projectId, evalId);
  const b = isObject(body) ? body : {};
  const issues = [
    ...dataSourceIssues(b.data_source),
    ...metadataIssues(b.metadata, ['body', 'metadata']),
    ...(b.name !== undefined && typeof b.name !== 'string'
      ? [{ loc: ['body', 'name'], msg: 'name must be a string', type: 'string' }]
      : []),
  ];
  if (issues.length) throw badRequest(issues);
  const ds = b.data_source as JsonObject;
  const criteria = parseJson<SubGrader[]>(evalRow.testing_criteria, []);
  const graderModels = [...new Set(criteria.map(modelOfGrader).filter((m): m is string => m !== null))];
  const resolved = await resolveNames(ports, projectId, graderModels, ['body', 'testing_criteria']);
  const genModel =
    typeof ds.model === 'string'
      ? ((await resolveNames(ports, projectId, [ds.model], ['body', 'data_source', 'model'])).get(ds.model) ??
        null)
      : null;
  const checked = checkedSource(ds, genModel);
  const config = parseJson<JsonObject>(evalRow.data_source_config, {});
  if (checked.source.type === 'file_content') {
    checkItems(config.item_schema, checked.source.content as JsonObject[]);
  }
  const runId = newId('run');
  const evalFilter =
    config.type === 'custom' ? {} : ((config.metadata as Record<string, string> | undefined) ?? {});
  const datasetId = await rowsOf(ports, projectId, checked.source, runId, evalFilter);
  const count = Number(
    (await db.selectFrom('datasets').select('item_count').where('id', '=', datasetId).executeTakeFirst())
      ?.item_count ?? 0,
  );
  const range = { start: 0, end: count };
  const rows: PlannedSide = { type: 'dataset', ref: datasetId, models: [], range, shape: 'eval' };
  const sample: PlannedSide =
    checked.model && checked.request
      ? { type: 'generate', ref: null, models: [checked.model], range, request: checked.request }
      : rows;
  const evaluators = criteria.map((c, i) => {
    const snap = snapshotOf(evalRow.id, i, c);
    const name = modelOfGrader(c);
    const model = name ? resolved.get(name)?.slug : undefined;
    if (model && snap.grader && (snap.grader.type === 'score_model' || snap.grader.type === 'label_model')) {
      snap.grader = { ...snap.grader, model };
      snap.model = model;
    }
    return snap;
  });
  checkJudges({ evaluators }, principal.permissions);
  const containerId = await evalsContainer(db, projectId);
  const generated = sample.type === 'generate' ? 'sample' : null;
  const sides = { sample, ground_truth: rows, baseline: null };
  const plan: RunPlan = {
    projectId,
    containerId,
    sides,
    generated,
    launches: launchesOf({ sides, generated }),
    evaluators,
  };
  const now = nowIso();
  const name = typeof b.name === 'string' ? b.name : `${evalRow.name || 'eval'} run`;
  await queueRun(db, {
    id: runId,
    project_id: projectId,
    container_id: containerId,
    environment: 'main',
    evaluators: JSON.stringify(evaluators.map((e) => e.id)),
    dataset_ids: JSON.stringify([datasetId]),
    sample: JSON.stringify({ type: sample.type, range: `0:${count}` }),
    ground_truth: JSON.stringify({ type: 'dataset', dataset: datasetId, range: `0:${count}` }),
    baseline: null,
    config: JSON.stringify({ eval_id: evalRow.id, data_source: ds }),
    metadata: b.metadata ? JSON.stringify(b.metadata) : null,
    plan: JSON.stringify(plan),
    results: null,
    metrics: JSON.stringify({ progress: { done: 0, total: null } }),
    spend: 0,
    error: null,
    process_id: null,
    idempotency_key: null,
    request_hash: null,
    cancel_requested: 0,
    created_at: now,
    started_at: null,
    finished_at: null,
    error_at: null,
    updated_at: now,
  });
  const link: EvalRunTable = {
    run_id: runId,
    eval_id: evalRow.id,
    project_id: projectId,
    name,
    metadata: b.metadata ? JSON.stringify(b.metadata) : null,
    data_source: JSON.stringify(ds),
    model: typeof ds.model === 'string' ? ds.model : '',
    created_at: now,
  };
  await db.insertInto('eval_runs').values(link).execute();
  await ports.runs.queue.submit({ id: runId, environment: 'main' });
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
