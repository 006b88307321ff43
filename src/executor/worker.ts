import { hostname } from 'node:os';
import type { Kysely } from 'kysely';
import type { RunSettings } from '../config.js';
import type { Database } from '../db/schema.js';
import { Engine, type EngineDeps } from '../engine/work.js';
import { InlineExecutor } from './inline.js';
import type { RunQueue } from './run-queue.js';
import type { Executor } from './types.js';

/** What an executor is built from (by the composition root): the engine's ports and its own. */
export interface WorkerPorts {
  engine: EngineDeps;
  db: Kysely<Database>;
  queue: RunQueue;
  workerId: string;
  runs: Pick<
    RunSettings,
    'environments' | 'executor' | 'workerConcurrency' | 'leaseMs' | 'pollMs' | 'reconcileMs'
  >;
  /** Whether the database can claim rows with SKIP LOCKED (PostgreSQL). */
  skipLocked: boolean;
  /** Where BullMQ's queues are (the BullMQ executor only). */
  redis: { url: string; prefix: string };
  warn(message: string): void;
}

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

/**
 * The executor of one process: `serve` starts one in the embedded mode, `evalgate worker` in every mode.
 * Which implementation runs is the run queue's: inline (database leases) or BullMQ (loaded lazily).
 */
export async function createWorker(
  services: { ports: { worker: WorkerPorts } },
  options: WorkerOptions = {},
): Promise<Worker> {
  const ports = services.ports.worker;
  const { runs } = ports;
  const environments = options.environments ?? runs.environments;
  for (const env of environments) {
    if (!runs.environments.includes(env)) {
      throw new Error(
        `Unknown environment '${env}'; EVALGATE_ENVIRONMENTS configures: ${runs.environments.join(', ')}`,
      );
    }
  }
  const engine = new Engine(ports.engine);
  const executorOptions = {
    workerId: ports.workerId,
    host: hostname(),
    environments,
    concurrency: options.concurrency ?? runs.workerConcurrency,
    leaseMs: runs.leaseMs,
    pollMs: runs.pollMs,
    reconcileMs: runs.reconcileMs,
    warn: ports.warn,
  };
  let executor: Executor;
  if (runs.executor === 'inline') {
    executor = new InlineExecutor(ports.db, engine, ports.queue, {
      ...executorOptions,
      skipLocked: ports.skipLocked,
    });
  } else {
    const { BullExecutor } = await import('./bullmq.js');
    executor = new BullExecutor(ports.db, engine, ports.queue, ports.redis, executorOptions);
  }
  return {
    engine,
    environments,
    start: () => executor.start(),
    close: () => executor.close(),
  };
}
