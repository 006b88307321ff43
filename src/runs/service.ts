import { createHash } from 'node:crypto';
import type { Kysely } from 'kysely';
import { findContainer } from '../catalog/containers/repository.js';
import { requireContainer } from '../catalog/containers/service.js';
import type { Database } from '../db/schema.js';
import type { Layout, PlannedSide, RunPlan } from '../engine/plan.js';
import { launchesOf } from '../engine/plan.js';
import { runMetrics } from '../engine/progress.js';
import { createRun as birth, repeatedRun } from '../engine/store/birth.js';
import { countersOf } from '../engine/store/runs.js';
import { cancelQueued, renameRun, requestCancel } from '../engine/store/transitions.js';
import { QueueUnavailable, type RunQueue } from '../executor/run-queue.js';
import { liveWorkers } from '../executor/workers.js';
import type { ListResponse, Page } from '../http/schemas.js';
import { DEFAULT_CACHE_TTL_SECONDS } from '../llm/cache/cache.js';
import { ApiError } from '../shared/errors.js';
import { newId } from '../shared/ids.js';
import { type JsonObject, parseJson } from '../shared/json.js';
import { usd } from '../shared/numbers.js';
import { experimentInputIssues } from '../sources/experiment.js';
import { pairSides } from '../sources/pairing.js';
import { generatedSide, type SourceRegistry } from '../sources/registry.js';
import { checkCreate, checkJudges } from './access.js';
import type { RunContext } from './context.js';
import * as repo from './repository.js';
import { resolveSide, snapshotEvaluators, stableJson, validateShape } from './resolution.js';
import type { CreateRun, PatchRun, ResolvedSource, Run, RunResults } from './schemas.js';
import { isTerminal, type RunStatus } from './schemas.js';

export { type RunCatalog, type RunContext, type RunParts, runContext } from './context.js';

/** Stored at the end; while the run executes, read from the counters every executing process increments. */
function metricsOf(row: repo.RunRow): JsonObject | null {
  if (isTerminal(row.status)) return parseJson<JsonObject | null>(row.metrics, null);
  const layout = parseJson<Layout | null>(row.layout, null);
  return runMetrics(countersOf(row), layout, row.started_at, null) as unknown as JsonObject;
}

/** The API's view of a run; each side shown by its source kind (`sourceKinds`: the app's). */
export function toRun(row: repo.RunRow, sourceKinds: SourceRegistry): Run {
  const sideView = (side: PlannedSide | null): ResolvedSource | null => sourceKinds.sideView(side);
  const terminal = isTerminal(row.status);
  const counters = countersOf(row);
  const plan = parseJson<RunPlan | null>(row.plan, null);
  const datasetIds = parseJson<string[]>(row.dataset_ids, []);
  return {
    object: 'evaluation.run',
    id: row.id,
    name: row.name,
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

/**
 * A run that will call a model is refused at creation once its project's budget (or the creating key's)
 * is spent: the gateway's `budget_exceeded` (429, `Retry-After` until the period resets), rather than a
 * run that is created only to fail at its first call.
 */
export async function checkBudget(
  ctx: Pick<RunContext, 'budgets' | 'scorerKinds'>,
  principal: { projectId: string; keyId?: string | null },
  plan: Pick<RunPlan, 'generated' | 'evaluators'>,
): Promise<void> {
  if (ctx.budgets && ctx.scorerKinds.callsModels(plan)) {
    await ctx.budgets.check({ projectId: principal.projectId, keyId: principal.keyId ?? null });
  }
}

export async function createRun(
  ctx: RunContext,
  principal: { projectId: string; keyId?: string | null; permissions: readonly string[] },
  body: CreateRun,
  idempotencyKey: string | null,
): Promise<Run> {
  const { projectId } = principal;
  validateShape(ctx, body);
  checkCreate(ctx, body, principal.permissions);
  const idempotency = {
    key: idempotencyKey,
    requestHash: createHash('sha256').update(stableJson(body)).digest('hex'),
  };
  const repeated = await repeatedRun(ctx.db, projectId, idempotency);
  if (repeated) return toRun(await requireRun(ctx.db, projectId, repeated.id), ctx.sourceKinds);
  const container = await requireContainer(ctx.db, projectId, body.container);
  const { sample, ground_truth: groundTruth } = pairSides(
    {
      sample: await resolveSide(ctx, projectId, 'sample', body.sample, container.id),
      ground_truth: await resolveSide(ctx, projectId, 'ground_truth', body.ground_truth, container.id),
    },
    { sample: !body.sample, ground_truth: !body.ground_truth },
    container.id,
  );
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
  checkJudges(ctx, { evaluators }, principal.permissions);
  const sides = { sample, ground_truth: groundTruth, baseline };
  const generated = generatedSide(sides);
  // An experiment's prompt variables, checked against the dataset items it will render them from.
  const inputIssues = await experimentInputIssues(ctx.db, sides, generated);
  if (inputIssues.length) throw ApiError.validation(inputIssues);
  // Read-your-writes for recorded traffic: a side over task logs sees the calls answered before this
  // request, which the task-log writer may still hold (the executor counts the logs when it starts).
  if (ctx.sourceKinds.readsRecorded([sample, groundTruth, baseline])) await ctx.settleLogs();
  const plan: RunPlan = {
    projectId,
    containerId: container.id,
    sides,
    generated,
    launches: launchesOf({ sides, generated }),
    evaluators,
    cache: body.cache
      ? { mode: body.cache.mode ?? 'use', ttlSeconds: body.cache.ttl_seconds ?? DEFAULT_CACHE_TTL_SECONDS }
      : null,
  };
  await checkBudget(ctx, principal, plan);
  const datasetIds = [
    ...new Set([sample, groundTruth, baseline].flatMap((s) => ctx.sourceKinds.sideView(s)?.dataset ?? [])),
  ];
  const born = await birth(ctx.db, plan, {
    kind: 'api',
    id: newId('run'),
    idempotency,
    environment: body.environment ?? 'main',
    name: body.name ?? null,
    metadata: body.metadata ?? null,
    config: body,
    datasetIds,
  });
  // Another request with the same key won the race: its run is this request's answer.
  if (!born.created) return toRun(await requireRun(ctx.db, projectId, born.run.id), ctx.sourceKinds);
  await submitOrExplain(ctx.queue, born.run.id, born.run.environment);
  return withQueue(ctx, toRun({ ...born.run, container_label: container.label }, ctx.sourceKinds));
}

/**
 * Hands a stored run to the run queue, the same way for every origin (API runs, eval runs). The queue
 * away (Redis down) is a 503 within the submit timeout that says the run exists and will run: it stays
 * `queued` in the database and the executors submit it once the queue is back. Retrying with the same
 * Idempotency-Key returns this run, not a second one.
 */
export async function submitOrExplain(queue: RunQueue, runId: string, environment: string): Promise<void> {
  try {
    await queue.submit({ id: runId, environment });
  } catch (err) {
    if (!(err instanceof QueueUnavailable)) throw err;
    throw new ApiError(
      'upstream_unavailable',
      `The run queue is unavailable; run ${runId} was created and stays queued until it is back, then runs`,
      { dependency: 'redis', run_id: runId, run_created: true, status: 'queued' },
      [],
      { 'Retry-After': '5' },
    );
  }
}

export async function requireRun(db: Kysely<Database>, projectId: string, id: string): Promise<repo.RunRow> {
  const row = await repo.findRun(db, projectId, id);
  if (!row) throw ApiError.notFound('Run', id);
  return row;
}

export async function listRuns(
  ctx: RunContext,
  projectId: string,
  filter: { container?: string | null; status?: RunStatus | null; name?: string | null },
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
    { containerId, status: filter.status ?? null, name: filter.name ?? null },
    page,
  );
  return { object: 'list', data: rows.map((row) => toRun(row, ctx.sourceKinds)), total };
}

/** Names (or renames, or unnames) a run of the project, whatever its status. */
export async function patchRun(
  ctx: RunContext,
  projectId: string,
  id: string,
  patch: PatchRun,
): Promise<Run> {
  const row = await requireRun(ctx.db, projectId, id);
  await renameRun(ctx.db, row.id, patch.name);
  return withQueue(ctx, toRun(await requireRun(ctx.db, projectId, id), ctx.sourceKinds));
}

export async function cancelRun(ctx: RunContext, projectId: string, id: string): Promise<Run> {
  const row = await requireRun(ctx.db, projectId, id);
  if (isTerminal(row.status)) {
    throw new ApiError('conflict', `Run is already ${row.status}`, { status: row.status });
  }
  await requestCancel(ctx.db, id);
  // A run not yet picked up ends here; a running one is stopped by its executor.
  await cancelQueued(ctx.db, id);
  // With the queue away, the stored flag alone stops the run (the executors end it from the database).
  await ctx.queue.cancel(id).catch((err: unknown) => {
    if (!(err instanceof QueueUnavailable)) throw err;
  });
  // Answer once the executors have stopped and ended the run (usually well under a second), so the
  // response shows it `cancelled` with its partial results; a run still stopping after the wait is
  // answered as it is, with its cancellation recorded.
  const until = Date.now() + CANCEL_WAIT_MS;
  let current = await requireRun(ctx.db, projectId, id);
  while (!isTerminal(current.status) && Date.now() < until) {
    await new Promise((r) => setTimeout(r, 50));
    current = await requireRun(ctx.db, projectId, id);
  }
  return toRun(current, ctx.sourceKinds);
}

const CANCEL_WAIT_MS = 5000;

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

/**
 * Reads of runs' samples and sides beyond the API's views: a run's score distribution, its sides' labels,
 * how each evaluator's samples ended, and the scores one item got across runs.
 */
export {
  type EvaluatorTally,
  type ItemScore,
  scoreCounts,
  scoresOfItem,
  sideLabels,
  tallyByEvaluator,
} from './repository.js';
