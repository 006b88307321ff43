import { hostname } from 'node:os';
import { countDatasetItems, readDatasetItems } from '../catalog/datasets/items.js';
import { countContainerLogs, readContainerLogItems } from '../catalog/logs/items.js';
import type { Deps } from '../deps.js';
import type { PlannedSide } from '../engine/plan.js';
import { Engine } from '../engine/work.js';
import { InlineExecutor } from './inline.js';
import type { Executor } from './types.js';

export interface WorkerOptions {
  /** Environments whose runs this worker executes (default: every configured one). */
  environments?: string[];
  /** Chunks executed at once (default: EVALGATE_WORKER_CONCURRENCY). */
  concurrency?: number;
}

export interface Worker {
  readonly engine: Engine;
  readonly environments: string[];
  start(): Promise<void>;
  close(): Promise<void>;
}

/** The engine over the services' parts: item readers, model calls, limits, scorers, metrics. */
export function createEngine(services: Deps): Engine {
  const { db, config } = services;
  const read = (side: PlannedSide, range: { start: number; end: number }) =>
    side.type === 'dataset'
      ? readDatasetItems(db, side.ref ?? '', range)
      : readContainerLogItems(db, side.ref ?? '', range);
  return new Engine({
    db,
    readItems: read,
    countItems: (side) =>
      side.type === 'dataset'
        ? countDatasetItems(db, side.ref ?? '')
        : countContainerLogs(db, side.ref ?? ''),
    resolveModel: services.resolveModel,
    providers: services.providers,
    limiter: services.modelLimiter,
    metrics: services.metrics,
    modelConcurrency: config.runs.modelConcurrency,
    rateLimitWaitMs: config.runs.rateLimitWaitMs,
    ledgerFlushMs: 250,
    warn: (message) => services.logger.warn(message),
    createCodeScorer: (ev) => services.sandbox.createScorer(ev),
    sandbox: () => services.sandbox.status(),
    chunkSize: config.runs.chunkSize,
    scorerIdleMs: config.runs.scorerIdleMs,
    workerId: services.workerId,
  });
}

/**
 * The executor of one process: `serve` starts one in the embedded mode, `evalgate worker` in every mode.
 * Which implementation runs is the run queue's: inline (database leases) or BullMQ (loaded lazily).
 */
export async function createWorker(services: Deps, options: WorkerOptions = {}): Promise<Worker> {
  const { config } = services;
  const environments = options.environments ?? config.runs.environments;
  for (const env of environments) {
    if (!config.runs.environments.includes(env)) {
      throw new Error(
        `Unknown environment '${env}'; EVALGATE_ENVIRONMENTS configures: ${config.runs.environments.join(', ')}`,
      );
    }
  }
  const engine = createEngine(services);
  const executorOptions = {
    workerId: services.workerId,
    host: hostname(),
    environments,
    concurrency: options.concurrency ?? config.runs.workerConcurrency,
    leaseMs: config.runs.leaseMs,
    pollMs: config.runs.pollMs,
    warn: (message: string) => services.logger.warn(message),
  };
  let executor: Executor;
  if (config.runs.executor === 'inline') {
    executor = new InlineExecutor(services.db, engine, services.queue, {
      ...executorOptions,
      skipLocked: services.database.capabilities.supportsSkipLocked,
    });
  } else {
    const { BullExecutor } = await import('./bullmq.js');
    executor = new BullExecutor(
      services.db,
      engine,
      services.queue,
      { url: config.redisUrl ?? '', prefix: config.redisPrefix },
      executorOptions,
    );
  }
  return {
    engine,
    environments,
    start: () => executor.start(),
    close: () => executor.close(),
  };
}
