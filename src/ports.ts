import path from 'node:path';
import type { FastifyBaseLogger } from 'fastify';
import type { Authenticator } from './auth/authenticator.js';
import type { ApiKeyPorts } from './auth/routes.js';
import type { BudgetPorts } from './budgets/routes.js';
import type { Budgets } from './budgets/service.js';
import type { LogWriter } from './capture/types.js';
import type { ItemOrigins } from './catalog/datasets/origins.js';
import type { DatasetContext } from './catalog/datasets/service.js';
import type { UploadContext } from './catalog/json-lines.js';
import { logDraft } from './catalog/logs/dataset-item.js';
import type { LogContext } from './catalog/logs/service.js';
import type { RegistryContext } from './catalog/models/service.js';
import type { Config } from './config.js';
import type { DashboardPorts } from './dashboard/context.js';
import type { DatabaseHandle } from './db/database.js';
import { type EvaluatorSnapshot, isGenerated } from './engine/plan.js';
import type { ScorerRegistry } from './engine/scorers/registry.js';
import type { EngineDeps } from './engine/work.js';
import type { EvaluatorContext } from './evaluators/service.js';
import type { RunQueue } from './executor/run-queue.js';
import type { WorkerPorts } from './executor/worker.js';
import type { InferencePorts } from './gateway/routes.js';
import type { GuardPorts } from './guards/routes.js';
import { createGuardRuntime, type GuardRuntime } from './guards/runtime.js';
import type { HealthPorts } from './http/health.js';
import type { ResponseCache } from './llm/cache/cache.js';
import { createModelCaller } from './llm/call-model.js';
import { checkUpstreamUrlResolved } from './llm/egress/policy.js';
import type { SelfAddresses } from './llm/egress/self-addresses.js';
import type { ModelContext } from './llm/models/resolve.js';
import type { ResolvedModel } from './llm/models/types.js';
import type { ProviderLayer } from './llm/provider-layer.js';
import type { MonitorContext } from './monitors/service.js';
import type { Metrics } from './observability/metrics.js';
import type { OtelExport } from './observability/otel-export.js';
import { type StoredScore, scoreExporter } from './observability/otel-export-hooks.js';
import type { EvalsPorts } from './openai-evals/evals-routes.js';
import type { GraderApiPorts } from './openai-evals/graders-service.js';
import type { StoredCompletionPorts } from './openai-evals/stored-completions-service.js';
import type { PlaygroundPorts } from './playground/routes.js';
import type { PromptPorts } from './prompts/routes.js';
import type { RateLimiter } from './ratelimit/limiter.js';
import type { ModelLimiter } from './ratelimit/model-limiter.js';
import { reviewDraft } from './review/dataset-item.js';
import type { ReviewPorts } from './review/ports.js';
import { type RunContext, runContext } from './runs/service.js';
import type { CodeToCheck } from './scoring/code/check-source.js';
import type { Scorer } from './scoring/types.js';
import { sessionDraft } from './sessions/dataset-item.js';
import type { SessionPorts } from './sessions/routes.js';
import type { SourceRegistry } from './sources/registry.js';
import { spanDraft } from './traces/dataset-item.js';
import type { OtlpInflight } from './traces/otlp/inflight.js';
import type { TracePorts } from './traces/routes.js';
import type { TraceService } from './traces/service.js';

/** Where code evaluators run: whether this process can sandbox them, and a scorer for one evaluator. */
export interface Sandbox {
  status(): Promise<{ available: boolean; reason?: string }>;
  createScorer(evaluator: EvaluatorSnapshot): Promise<Scorer>;
  /** Checks a code evaluator where it will run (the sandbox runner's Python); absent: with EVALGATE_PYTHON here. */
  check?(input: CodeToCheck): Promise<void>;
}

/**
 * What each feature is given: the few things it declares it needs (its own interface, beside its
 * registration), built here once from the process's parts and slices of the config.
 */
export interface Ports {
  health: HealthPorts;
  apiKeys: ApiKeyPorts;
  /** The project's budget route. */
  budgets: BudgetPorts;
  containers: { db: DatabaseHandle['db'] };
  /** Datasets, and the recorded objects items are made from. */
  datasets: DatasetContext;
  logs: LogContext;
  models: RegistryContext;
  evaluators: EvaluatorContext;
  inference: InferencePorts;
  runs: RunContext;
  /** OpenAI's graders API (graders/run, validate) and files API (eval data as datasets). */
  graders: GraderApiPorts;
  files: UploadContext;
  evals: EvalsPorts;
  /** OpenAI's stored chat completions (chat calls made with `store: true`). */
  storedCompletions: StoredCompletionPorts;
  monitors: MonitorContext;
  /** Sessions (conversations, agent runs) read back. */
  sessions: SessionPorts;
  /** OTLP ingest and the trace store's reads. */
  traces: TracePorts;
  /** Annotation queues, human reviews and agreement. */
  review: ReviewPorts;
  /** Versioned prompts, their labels and diffs. */
  prompts: PromptPorts;
  /** The playground: its calls go through the one model call and are recorded in its container. */
  playground: PlaygroundPorts;
  /** Guard policies (`/v1/guards`); the gateway applies them through `inference.guards`. */
  guards: GuardPorts;
  dashboard: DashboardPorts;
  /** The executor and its engine (`createWorker`). */
  worker: WorkerPorts;
}

/** The parts of one process the ports are cut from (built by `createServices`). */
export interface Parts {
  config: Config;
  logger: FastifyBaseLogger;
  workerId: string;
  database: DatabaseHandle;
  pepper: string;
  hopId: string;
  auth: Authenticator;
  /** Spend limits of keys and projects: the gateway's and the engine's guard, the routes' admin. */
  budgets: Budgets;
  limiter: RateLimiter;
  models: ModelContext;
  resolveModel(projectId: string, ref: string): Promise<ResolvedModel>;
  self: SelfAddresses;
  logWriter: LogWriter;
  /** Spans received over OTLP: ingest into the capture processor's span lane, its sink and the reads. */
  traces: TraceService;
  /** The OTLP export bytes in flight across requests, bounded (429 past the bound). */
  otlpInflight: OtlpInflight;
  providers: ProviderLayer;
  /** The response cache (the database's table embedded, Redis in scale-out). */
  cache: ResponseCache;
  queue: RunQueue;
  modelLimiter: ModelLimiter;
  metrics: Metrics;
  sandbox: Sandbox;
  /** The OTLP export of calls and scores, when the operator configured one. */
  otelExport?: OtelExport | null;
  /** This app's source kinds (what a run side may read), handed to every feature that asks a side's kind. */
  sourceKinds: SourceRegistry;
  /** This app's scorer kinds (how an evaluator scores), handed to every feature that asks an evaluator's kind. */
  scorerKinds: ScorerRegistry;
}

/** The engine's ports: item readers, model calls, limits, scorers, metrics and the run settings it uses. */
function engineDeps(p: Parts): EngineDeps {
  const { db } = p.database;
  const { runs } = p.config;
  return {
    db,
    // Items are counted, read and generated by each side's source kind (src/sources/).
    ...p.sourceKinds.ports(db),
    scorerKinds: p.scorerKinds,
    resolveModel: p.resolveModel,
    providers: p.providers,
    cache: p.cache,
    limiter: p.modelLimiter,
    metrics: p.metrics,
    modelConcurrency: runs.modelConcurrency,
    rateLimitWaitMs: runs.rateLimitWaitMs,
    ledgerFlushMs: 250,
    budgets: p.budgets,
    warn: (message) => p.logger.warn(message),
    createCodeScorer: (ev) => p.sandbox.createScorer(ev),
    sandbox: () => p.sandbox.status(),
    chunkSize: runs.chunkSize,
    scorerIdleMs: runs.scorerIdleMs,
    workerId: p.workerId,
    ...(p.otelExport ? { onScored: scoresOut(p, p.otelExport) } : {}),
  };
}

/**
 * What dataset items are made from, each read by its own feature; recorded calls are flushed first, so
 * that a call just made can become an item.
 */
function itemOrigins(p: Parts): ItemOrigins {
  const { db } = p.database;
  const settle = () => p.logWriter.flush();
  return {
    async taskLog(projectId, id) {
      await settle();
      return logDraft(db, projectId, id);
    },
    async span(projectId, spanId, traceId) {
      await settle();
      return spanDraft(db, projectId, spanId, traceId);
    },
    async session(projectId, id) {
      await settle();
      return sessionDraft(db, projectId, id);
    },
    review: (projectId, id) => reviewDraft({ db, sourceKinds: p.sourceKinds }, projectId, id),
  };
}

/** Source kinds whose items are task logs (item id = task log id): a container's, a monitor's selection. */
const TASK_LOG_SIDES = new Set(['container', 'monitor']);

/** Scored rows whose sample is a recorded call (its task log) go out as evaluation events of its span. */
function scoresOut(p: Parts, exporter: OtelExport): NonNullable<EngineDeps['onScored']> {
  const emit = scoreExporter(p.database.db, exporter, (message) => p.logger.warn(message));
  return (plan, rows) => {
    const sample = plan.sides.sample;
    if (isGenerated(sample) || !TASK_LOG_SIDES.has(sample.type)) return;
    const names = new Map(plan.evaluators.map((e) => [e.id, e.name]));
    const scores: StoredScore[] = [];
    for (const r of rows) {
      if (r.status !== 'scored' || r.item_id === null) continue;
      scores.push({
        projectId: plan.projectId,
        runId: r.run_id,
        evaluatorId: r.evaluator_id,
        evaluatorName: names.get(r.evaluator_id) ?? r.evaluator_id,
        taskLogId: r.item_id,
        score: r.score,
        passed: r.passed,
        reasoning: r.reasoning,
        createdAt: r.created_at,
      });
    }
    emit(scores);
  };
}

/** The gateway's guards: policies compiled per project, evaluator checks through the one model call. */
function guardRuntime(p: Parts): GuardRuntime {
  return createGuardRuntime({
    db: p.database.db,
    resolveModel: p.resolveModel,
    providers: p.providers,
    budgets: p.budgets,
    models: { limiter: p.modelLimiter, concurrency: p.config.runs.modelConcurrency },
    sandbox: p.sandbox,
    scorerKinds: p.scorerKinds,
    metrics: p.metrics,
    warn: (message) => p.logger.warn(message),
  });
}

/** OpenAI's graders API: its model calls are paid and limited as the gateway's are. */
function graderPorts(p: Parts): GraderApiPorts {
  return {
    resolveModel: p.resolveModel,
    providers: p.providers,
    sandbox: p.sandbox,
    budgets: p.budgets,
    models: { limiter: p.modelLimiter, concurrency: p.config.runs.modelConcurrency },
    scorerKinds: p.scorerKinds,
  };
}

/** The OTLP routes' ports: the trace store, the limits of one export and the bound on those in flight. */
function tracePorts(p: Parts): TracePorts {
  const { config } = p;
  return {
    db: p.database.db,
    store: p.traces,
    bodyLimit: config.bodyLimit,
    ...config.otlpIngest,
    inflight: p.otlpInflight,
  };
}

export function buildPorts(p: Parts): Ports {
  const { config } = p;
  const { db } = p.database;
  const warn = (message: string) => p.logger.warn(message);
  const uploads: UploadContext = {
    db,
    spoolDir: path.join(config.dataDir, 'tmp'),
    uploadLimit: config.uploadLimit,
    maxRowChars: config.bodyLimit,
  };
  const { sourceKinds, scorerKinds } = p;
  const evaluators: EvaluatorContext = {
    db,
    python: config.python,
    ...(p.sandbox.check ? { checkCode: p.sandbox.check } : {}),
    resolveModel: p.resolveModel,
    scorerKinds,
  };
  const runs = runContext({
    db,
    environments: config.runs.environments,
    queue: p.queue,
    resolveModel: p.resolveModel,
    sandbox: config.runs.executor === 'inline' && config.runs.serveExecutes ? () => p.sandbox.status() : null,
    flushLogs: () => p.logWriter.flush(),
    budgets: p.budgets,
    sourceKinds,
    scorerKinds,
  });
  const apiKeys: ApiKeyPorts = { db, pepper: p.pepper, auth: p.auth, budgets: p.budgets };
  const playground: PlaygroundPorts = {
    db,
    // The one model call, as graders and runs make it: the model's limits, the payer's budgets.
    caller: createModelCaller({
      providers: p.providers,
      budgets: p.budgets,
      limits: { limiter: p.modelLimiter, concurrency: config.runs.modelConcurrency },
    }),
    resolveModel: p.resolveModel,
    logWriter: config.recording ? p.logWriter : null,
    runs,
    sandbox: p.sandbox,
    scorerKinds,
  };
  const guards = guardRuntime(p);
  const checkUpstream = (url: string) =>
    checkUpstreamUrlResolved(url, config.upstreamPolicy, undefined, p.self);
  const monitors: MonitorContext = {
    db,
    runs,
    queue: p.queue,
    environments: config.runs.environments,
    chunkSize: config.runs.chunkSize,
    workerId: p.workerId,
    // Alert webhooks go where a registered model may: the upstream safety policy applies.
    checkUrl: checkUpstream,
  };
  return {
    health: {
      database: p.database,
      limiter: p.limiter,
      queue: p.queue,
      redis: { configured: Boolean(config.redisUrl), queue: config.runs.executor === 'bullmq' },
      warn,
    },
    apiKeys,
    budgets: { budgets: p.budgets },
    containers: { db },
    datasets: { ...uploads, origins: itemOrigins(p) },
    logs: { ...uploads, settle: () => p.logWriter.flush() },
    models: {
      ...p.models,
      // With the server's own ports, so that a model cannot be pointed at the gateway itself.
      checkUpstream,
    },
    evaluators,
    graders: graderPorts(p),
    files: uploads,
    evals: {
      runs,
      uploads,
      resolveModel: p.resolveModel,
      flushLogs: () => p.logWriter.flush(),
      publicUrl: config.dashboard.publicUrl ?? null,
    },
    storedCompletions: {
      db,
      flush: () => p.logWriter.flush(),
      holds: (logId) => p.logWriter.holds?.(logId) ?? true,
    },
    sessions: { db, settle: () => p.logWriter.flush(), limits: config.sessionLimits },
    prompts: { db },
    playground,
    guards: { db, changed: (projectId) => guards.changed(projectId) },
    inference: {
      guards,
      providers: p.providers,
      cache: p.cache,
      hopId: p.hopId,
      limiter: p.limiter,
      budgets: p.budgets,
      gateway: {
        db,
        logWriter: p.logWriter,
        recording: config.recording,
        modelCacheMs: config.modelCacheMs,
        resolveModel: p.resolveModel,
      },
    },
    runs,
    monitors,
    traces: tracePorts(p),
    review: { db, sourceKinds },
    dashboard: {
      ...apiKeys,
      config,
      models: p.models,
      runs,
      uploads,
      evaluators,
      monitors,
      origins: itemOrigins(p),
      playground,
      guards: { db, changed: (projectId) => guards.changed(projectId) },
    },
    worker: {
      engine: engineDeps(p),
      db,
      queue: p.queue,
      workerId: p.workerId,
      runs: config.runs,
      skipLocked: p.database.capabilities.supportsSkipLocked,
      redis: { url: config.redisUrl ?? '', prefix: config.redisPrefix },
      warn,
    },
  };
}
