import { createHash } from 'node:crypto';
import type { Kysely } from 'kysely';
import { findContainer } from '../catalog/containers/repository.js';
import { requireContainer } from '../catalog/containers/service.js';
import { findDataset } from '../catalog/datasets/repository.js';
import type { ResolvedModel } from '../catalog/models/types.js';
import type { Database } from '../db/schema.js';
import type { Deps } from '../deps.js';
import type { EvaluatorSnapshot, Layout, PlannedSide, RunPlan, SideName } from '../engine/plan.js';
import { formatRange, launchesOf, parseRange } from '../engine/plan.js';
import { runMetrics } from '../engine/progress.js';
import type { RunQueue } from '../engine/run-queue.js';
import { countersOf, liveWorkers, transitionRun, updateRun } from '../engine/store.js';
import { requireEvaluator } from '../evaluators/service.js';
import type { ListResponse, Page } from '../http/schemas.js';
import { ApiError, type ValidationIssue } from '../shared/errors.js';
import { newId, nowIso } from '../shared/ids.js';
import { type JsonObject, parseJson } from '../shared/json.js';
import { usd } from '../shared/numbers.js';
import { checkCreate, checkJudges } from './access.js';
import * as repo from './repository.js';
import type { CreateRun, DataSource, ResolvedSource, Run, RunResults } from './schemas.js';
import { isTerminal } from './schemas.js';

/** What run creation needs from the rest of the service, injected so the rules stay testable. */
export interface RunCatalog {
  findDataset(projectId: string, ref: string): Promise<{ id: string } | undefined>;
  resolveModel(projectId: string, ref: string): Promise<ResolvedModel>;
  sandbox(): Promise<{ available: boolean; reason?: string }>;
}

export interface RunContext {
  db: Kysely<Database>;
  environments: readonly string[];
  catalog: RunCatalog;
  queue: RunQueue;
  /** A worker that has not beaten its heartbeat for this long is not counted as live. */
  workerTtlMs: number;
}

/** The run rules over the service's parts. */
export function runContext(deps: Deps): RunContext {
  return {
    db: deps.db,
    environments: deps.config.runs.environments,
    queue: deps.queue,
    workerTtlMs: WORKER_TTL_MS,
    catalog: {
      findDataset: (projectId, ref) => findDataset(deps.db, projectId, ref),
      resolveModel: deps.resolveModel,
      // Code runs where the executor runs: this process, or (BullMQ, or workers only) the workers, which
      // fail the evaluator's positions with `sandbox_unavailable` when they cannot sandbox.
      sandbox:
        deps.config.runs.executor === 'inline' && deps.config.runs.serveExecutes
          ? () => deps.sandbox.status()
          : async () => ({ available: true }),
    },
  };
}

/** Workers beat every second; one silent for ten is gone. */
const WORKER_TTL_MS = 10_000;

const VARIANT_FIELDS: Record<string, string[]> = {
  dataset: ['dataset'],
  container: ['container'],
  generate: ['models'],
};

function sideIssues(name: SideName, source: DataSource): ValidationIssue[] {
  const type = source.type ?? 'generate';
  const issues: ValidationIssue[] = [];
  const allowed = VARIANT_FIELDS[type] ?? [];
  for (const field of ['dataset', 'container', 'models']) {
    const given = (source as Record<string, unknown>)[field] !== undefined;
    if (allowed.includes(field) && !given) {
      issues.push({
        loc: ['body', name, field],
        msg: `Field required for a ${type} data source`,
        type: 'missing',
      });
    } else if (!allowed.includes(field) && given) {
      issues.push({
        loc: ['body', name, field],
        msg: `Not allowed in a ${type} data source`,
        type: 'extra_forbidden',
      });
    }
  }
  if (source.range) {
    const r = parseRange(source.range);
    if (r.start > r.end) {
      issues.push({
        loc: ['body', name, 'range'],
        msg: 'range start must not be greater than its end',
        type: 'value_error',
      });
    }
  }
  return issues;
}

/** Rules 1-3 of contract 4.3 and the shape of each side, all reported at once. */
function validateShape(body: CreateRun, environments: readonly string[]): void {
  const issues: ValidationIssue[] = [];
  if (!body.sample && !body.ground_truth) {
    issues.push({
      loc: ['body'],
      msg: 'At least one of sample and ground_truth must be provided',
      type: 'value_error',
    });
  }
  for (const name of ['sample', 'ground_truth', 'baseline'] as const) {
    const s = body[name];
    if (s) issues.push(...sideIssues(name, s));
  }
  const sampleGen = body.sample && (body.sample.type ?? 'generate') === 'generate';
  const truthGen = body.ground_truth && (body.ground_truth.type ?? 'generate') === 'generate';
  if (sampleGen && truthGen) {
    issues.push({
      loc: ['body'],
      msg: 'At least one of sample and ground_truth must not be of type generate, so that there is input data to evaluate',
      type: 'value_error',
    });
  }
  if (
    body.baseline &&
    (body.baseline.type ?? 'generate') === 'generate' &&
    (body.baseline.models?.length ?? 0) > 1
  ) {
    issues.push({
      loc: ['body', 'baseline', 'models'],
      msg: 'A generate baseline takes exactly one model',
      type: 'too_long',
    });
  }
  const env = body.environment ?? 'main';
  if (!environments.includes(env)) {
    issues.push({
      loc: ['body', 'environment'],
      msg: `Unknown environment '${env}'; configured: ${environments.join(', ')}`,
      type: 'enum',
    });
  }
  if (issues.length) throw ApiError.validation(issues);
}

function stableJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(stableJson).join(',')}]`;
  if (value && typeof value === 'object') {
    const entries = Object.entries(value as JsonObject).filter(([, v]) => v !== undefined);
    entries.sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${stableJson(v)}`).join(',')}}`;
  }
  return JSON.stringify(value);
}

async function resolveModelRef(
  ctx: RunContext,
  projectId: string,
  ref: string,
  loc: (string | number)[],
): Promise<ResolvedModel> {
  try {
    return await ctx.catalog.resolveModel(projectId, ref);
  } catch (err) {
    if (err instanceof ApiError && err.code === 'model_not_found') {
      throw new ApiError('not_found', `Model '${ref}' not found`, { resource: 'model', ref, loc });
    }
    throw err;
  }
}

async function resolveSide(
  ctx: RunContext,
  projectId: string,
  name: SideName,
  source: DataSource | null | undefined,
  containerId: string,
): Promise<PlannedSide> {
  if (!source) return { type: 'container', ref: containerId, models: [], range: parseRange(null) };
  const type = source.type ?? 'generate';
  const range = parseRange(source.range);
  if (type === 'dataset') {
    const ds = await ctx.catalog.findDataset(projectId, source.dataset ?? '');
    if (!ds)
      throw new ApiError('not_found', `Dataset '${source.dataset}' not found`, {
        resource: 'dataset',
        ref: source.dataset,
        loc: ['body', name, 'dataset'],
      });
    return { type, ref: ds.id, models: [], range };
  }
  if (type === 'container') {
    const c = await findContainer(ctx.db, projectId, source.container ?? '');
    if (!c)
      throw new ApiError('not_found', `Container '${source.container}' not found`, {
        resource: 'container',
        ref: source.container,
        loc: ['body', name, 'container'],
      });
    return { type, ref: c.id, models: [], range };
  }
  const models = source.models ?? [];
  await Promise.all(models.map((m, i) => resolveModelRef(ctx, projectId, m, ['body', name, 'models', i])));
  return { type, ref: null, models, range };
}

function sideView(side: PlannedSide | null): ResolvedSource | null {
  if (!side) return null;
  const view: ResolvedSource = { type: side.type, range: formatRange(side.range) };
  if (side.type === 'dataset') view.dataset = side.ref ?? '';
  if (side.type === 'container') view.container = side.ref ?? '';
  if (side.type === 'generate') view.models = side.models;
  return view;
}

/** Stored at the end; while the run executes, read from the counters every executing process increments. */
function metricsOf(row: repo.RunRow): JsonObject | null {
  if (isTerminal(row.status)) return parseJson<JsonObject | null>(row.metrics, null);
  const layout = parseJson<Layout | null>(row.layout, null);
  return runMetrics(countersOf(row), layout, row.started_at, null) as unknown as JsonObject;
}

export function toRun(row: repo.RunRow): Run {
  const terminal = isTerminal(row.status);
  const counters = countersOf(row);
  const plan = parseJson<RunPlan | null>(row.plan, null);
  const datasetIds = parseJson<string[]>(row.dataset_ids, []);
  return {
    object: 'evaluation.run',
    id: row.id,
    status: row.status,
    created_at: row.created_at,
    started_at: row.started_at,
    finished_at: row.finished_at,
    error_at: row.error_at,
    error: parseJson<Run['error']>(row.error, null),
    process_id: row.process_id,
    evaluators: parseJson<string[]>(row.evaluators, []),
    container: row.container_id,
    dataset_id: datasetIds[0] ?? null,
    sample: sideView(plan?.sides.sample ?? null),
    ground_truth: sideView(plan?.sides.ground_truth ?? null),
    baseline: sideView(plan?.sides.baseline ?? null),
    results: parseJson<RunResults | null>(row.results, null),
    metrics: metricsOf(row),
    config: parseJson<JsonObject | null>(row.config, null),
    spend: usd(terminal ? (row.spend ?? 0) : counters.judge_cost + counters.generation_cost),
    metadata: parseJson<JsonObject | null>(row.metadata, null),
    environment: row.environment,
  };
}

async function snapshotEvaluators(
  ctx: RunContext,
  projectId: string,
  refs: string[],
  containerId: string,
  hasBaseline: boolean,
): Promise<EvaluatorSnapshot[]> {
  const issues: ValidationIssue[] = [];
  const snapshots: EvaluatorSnapshot[] = [];
  for (const [i, ref] of refs.entries()) {
    const row = await requireEvaluator(ctx.db, projectId, ref).catch((err: unknown) => {
      if (err instanceof ApiError)
        throw new ApiError('not_found', `Evaluator '${ref}' not found`, {
          resource: 'evaluator',
          ref,
          loc: ['body', 'evaluators', i],
        });
      throw err;
    });
    if (row.container_id !== null && row.container_id !== containerId) {
      issues.push({
        loc: ['body', 'evaluators', i],
        msg: `Evaluator '${ref}' belongs to container '${row.container_label}'`,
        type: 'value_error',
      });
    }
    if (row.mode === 'pairwise' && !hasBaseline) {
      issues.push({
        loc: ['body', 'baseline'],
        msg: `Pairwise evaluator '${ref}' needs a baseline`,
        type: 'missing',
      });
    }
    if (snapshots.some((s) => s.id === row.id)) {
      issues.push({
        loc: ['body', 'evaluators', i],
        msg: `Evaluator '${ref}' is listed twice`,
        type: 'value_error',
      });
    }
    snapshots.push({
      id: row.id,
      name: row.name,
      type: row.type,
      mode: row.mode,
      model: row.model,
      prompt: row.prompt,
      api: row.api,
      inference_parameters: parseJson<JsonObject>(row.inference_parameters, {}),
      pass_threshold: row.pass_threshold,
      source: row.source,
      requirements: parseJson<string[]>(row.requirements, []),
    });
  }
  if (issues.length) throw ApiError.validation(issues);
  for (const [i, ev] of snapshots.entries()) {
    if (ev.type !== 'judge' || !ev.model) continue;
    const model = await resolveModelRef(ctx, projectId, ev.model, ['body', 'evaluators', i]);
    const wantsMessages = ev.api === 'messages';
    if (ev.api && wantsMessages !== (model.provider === 'anthropic')) {
      throw ApiError.invalid(
        ['body', 'evaluators', i],
        `Evaluator '${ev.name}' asks for api '${ev.api}' but its model is served by ${model.provider}`,
      );
    }
  }
  if (snapshots.some((s) => s.type === 'code')) {
    const sandbox = await ctx.catalog.sandbox();
    if (!sandbox.available) {
      throw new ApiError(
        'sandbox_unavailable',
        `Code evaluators cannot run here: ${sandbox.reason ?? 'no sandbox'}`,
      );
    }
  }
  return snapshots;
}

export async function createRun(
  ctx: RunContext,
  principal: { projectId: string; permissions: readonly string[] },
  body: CreateRun,
  idempotencyKey: string | null,
): Promise<Run> {
  const { projectId } = principal;
  validateShape(body, ctx.environments);
  checkCreate(body, principal.permissions);
  const requestHash = createHash('sha256').update(stableJson(body)).digest('hex');
  if (idempotencyKey !== null) {
    const existing = await repo.findRunByIdempotencyKey(ctx.db, projectId, idempotencyKey);
    if (existing) return sameRequest(existing, requestHash);
  }
  const container = await requireContainer(ctx.db, projectId, body.container);
  const sample = await resolveSide(ctx, projectId, 'sample', body.sample, container.id);
  const groundTruth = await resolveSide(ctx, projectId, 'ground_truth', body.ground_truth, container.id);
  const baseline = body.baseline
    ? await resolveSide(ctx, projectId, 'baseline', body.baseline, container.id)
    : null;
  const evaluators = await snapshotEvaluators(
    ctx,
    projectId,
    body.evaluators,
    container.id,
    baseline !== null,
  );
  checkJudges({ evaluators }, principal.permissions);
  const generated =
    sample.type === 'generate' ? 'sample' : groundTruth.type === 'generate' ? 'ground_truth' : null;
  const sides = { sample, ground_truth: groundTruth, baseline };
  const plan: RunPlan = {
    projectId,
    containerId: container.id,
    sides,
    generated,
    launches: launchesOf({ sides, generated }),
    evaluators,
  };
  const now = nowIso();
  const datasetIds = [
    ...new Set([sample, groundTruth, baseline].filter((s) => s?.type === 'dataset').map((s) => s?.ref ?? '')),
  ];
  const row = {
    id: newId('run'),
    project_id: projectId,
    container_id: container.id,
    status: 'queued',
    environment: body.environment ?? 'main',
    evaluators: JSON.stringify(evaluators.map((e) => e.id)),
    dataset_ids: JSON.stringify(datasetIds),
    sample: JSON.stringify(sideView(sample)),
    ground_truth: JSON.stringify(sideView(groundTruth)),
    baseline: baseline ? JSON.stringify(sideView(baseline)) : null,
    config: JSON.stringify(body),
    metadata: body.metadata ? JSON.stringify(body.metadata) : null,
    plan: JSON.stringify(plan),
    results: null,
    metrics: JSON.stringify({ progress: { done: 0, total: null } }),
    spend: 0,
    error: null,
    process_id: null,
    idempotency_key: idempotencyKey,
    request_hash: requestHash,
    cancel_requested: 0,
    created_at: now,
    started_at: null,
    finished_at: null,
    error_at: null,
    updated_at: now,
  };
  if (!(await repo.insertRun(ctx.db, row))) {
    // Another request with the same key won the race.
    const existing = await repo.findRunByIdempotencyKey(ctx.db, projectId, idempotencyKey ?? '');
    if (existing) return sameRequest(existing, requestHash);
  }
  await ctx.queue.submit({ id: row.id, environment: row.environment });
  return withQueue(ctx, toRun({ ...row, ...ZERO, container_label: container.label }));
}

function sameRequest(existing: repo.RunRow, requestHash: string): Run {
  if (existing.request_hash !== requestHash) {
    throw new ApiError(
      'idempotency_key_reused',
      'This Idempotency-Key was used with a different request body',
      {
        run_id: existing.id,
      },
    );
  }
  return toRun(existing);
}

export async function requireRun(db: Kysely<Database>, projectId: string, id: string): Promise<repo.RunRow> {
  const row = await repo.findRun(db, projectId, id);
  if (!row) throw ApiError.notFound('Run', id);
  return row;
}

export async function listRuns(
  ctx: RunContext,
  projectId: string,
  filter: { container?: string | null; status?: string | null },
  page: Page,
): Promise<ListResponse<Run>> {
  let containerId: string | null = null;
  if (filter.container) {
    const c = await findContainer(ctx.db, projectId, filter.container);
    if (!c) return { object: 'list', data: [], total: 0 };
    containerId = c.id;
  }
  const { rows, total } = await repo.listRuns(
    ctx.db,
    projectId,
    { containerId, status: filter.status ?? null },
    page,
  );
  return { object: 'list', data: rows.map(toRun), total };
}

export async function cancelRun(ctx: RunContext, projectId: string, id: string): Promise<Run> {
  const row = await requireRun(ctx.db, projectId, id);
  if (isTerminal(row.status)) {
    throw new ApiError('conflict', `Run is already ${row.status}`, { status: row.status });
  }
  await updateRun(ctx.db, id, { cancel_requested: 1, updated_at: nowIso() });
  // A run not yet picked up ends here; a running one is stopped by its executor.
  const now = nowIso();
  await transitionRun(ctx.db, id, ['queued'], {
    status: 'cancelled',
    finished_at: now,
    updated_at: now,
  });
  await ctx.queue.cancel(id);
  // Answer once the executors have stopped and ended the run (usually well under a second), so the
  // response shows it `cancelled` with its partial results; a run still stopping after the wait is
  // answered as it is, with its cancellation recorded.
  const until = Date.now() + CANCEL_WAIT_MS;
  let current = await requireRun(ctx.db, projectId, id);
  while (!isTerminal(current.status) && Date.now() < until) {
    await new Promise((r) => setTimeout(r, 50));
    current = await requireRun(ctx.db, projectId, id);
  }
  return toRun(current);
}

const CANCEL_WAIT_MS = 5000;

const ZERO = {
  done_positions: 0,
  total_positions: 0,
  judge_calls: 0,
  judge_prompt_tokens: 0,
  judge_completion_tokens: 0,
  judge_unpriced_calls: 0,
  judge_cost: 0,
  generation_calls: 0,
  generation_prompt_tokens: 0,
  generation_completion_tokens: 0,
  generation_unpriced_calls: 0,
  generation_cost: 0,
  layout: null,
  abandoned: null,
  progress_at: null,
};

/** Whether anything can execute a queued run: the live workers of its environment. */
export async function queueState(
  ctx: RunContext,
  environment: string,
): Promise<{ environment: string; live_workers: number; waiting_for_worker: boolean }> {
  const live = (await liveWorkers(ctx.db, environment, ctx.workerTtlMs)).length;
  return { environment, live_workers: live, waiting_for_worker: live === 0 };
}

/** A queued run says in its metrics whether its environment has a live worker to execute it. */
export async function withQueue(ctx: RunContext, run: Run): Promise<Run> {
  if (run.status !== 'queued') return run;
  return { ...run, metrics: { ...(run.metrics ?? {}), queue: await queueState(ctx, run.environment) } };
}
