import { setMaxListeners } from 'node:events';
import { FlowProducer, type Job, Worker } from 'bullmq';
import type { Redis } from 'ioredis';
import type { Kysely } from 'kysely';
import type { Database } from '../db/schema.js';
import { RunCancelled, RunInterrupted } from '../engine/errors.js';
import type { RunQueue } from '../engine/run-queue.js';
import * as store from '../engine/store.js';
import type { ChunkRef, Engine } from '../engine/work.js';
import { ScorerSetupError } from '../scoring/types.js';
import { connect, queueName } from './bullmq-shared.js';
import type { Executor, ExecutorOptions } from './types.js';

type JobData = { runId: string } | ChunkRef;

/** Attempts of one chunk job before it is left out of the run (which then ends in error). */
const CHUNK_ATTEMPTS = 8;

/**
 * The scale-out executor: consumes the BullMQ queue of each of its environments. A `prepare` job fixes the
 * run's chunks in the database and adds the run's flow: a `finalize` parent with one `chunk` child per
 * chunk, so the parent runs once every chunk is done (or given up). A worker that dies mid-chunk leaves
 * its job's lock to expire; BullMQ moves the stalled job back and another worker resumes the chunk,
 * skipping the positions already stored.
 */
export class BullExecutor implements Executor {
  private readonly workers: Worker[] = [];
  private readonly connections: Redis[] = [];
  private readonly active = new Map<string, Set<AbortController>>();
  private flow: FlowProducer | null = null;
  private heartbeat: NodeJS.Timeout | null = null;
  private unsubscribe: (() => void) | null = null;
  private closing = false;

  constructor(
    private readonly db: Kysely<Database>,
    private readonly engine: Engine,
    private readonly queue: RunQueue,
    private readonly redis: { url: string; prefix: string },
    private readonly options: ExecutorOptions,
  ) {}

  private connection(): Redis {
    const redis = connect(this.redis.url);
    this.connections.push(redis);
    return redis;
  }

  async start(): Promise<void> {
    const o = this.options;
    await store.registerWorker(this.db, {
      id: o.workerId,
      environments: o.environments,
      executor: 'bullmq',
      host: o.host,
      pid: process.pid,
      concurrency: o.concurrency,
    });
    this.unsubscribe = this.queue.subscribe({
      cancelled: (runId) => {
        for (const c of this.active.get(runId) ?? []) c.abort(new RunCancelled(runId));
      },
    });
    this.flow = new FlowProducer({ connection: this.connection(), prefix: this.redis.prefix });
    for (const environment of o.environments) {
      const worker = new Worker<JobData>(
        queueName(environment),
        (job, _token, signal) => this.process(environment, job, signal),
        {
          connection: this.connection(),
          prefix: this.redis.prefix,
          concurrency: o.concurrency,
          // A killed worker's job is taken back after its lock expires and the next stalled check.
          lockDuration: o.leaseMs,
          stalledInterval: Math.max(500, Math.floor(o.leaseMs / 2)),
          maxStalledCount: 10,
        },
      );
      worker.on('error', (err) => o.warn(`bullmq worker (${environment}): ${err.message}`));
      this.workers.push(worker);
    }
    this.heartbeat = setInterval(() => {
      store
        .heartbeatWorker(this.db, o.workerId)
        .catch((err: Error) => o.warn(`worker heartbeat: ${err.message}`));
    }, 1000);
    this.heartbeat.unref();
  }

  private async process(environment: string, job: Job<JobData>, signal?: AbortSignal): Promise<void> {
    if (job.name === 'prepare') return this.prepare(environment, job.data.runId);
    if (job.name === 'finalize') {
      await this.engine.finalizeRun(job.data.runId);
      return;
    }
    if (job.name === 'chunk' && 'chunk' in job.data) return this.chunk(job.data, signal);
  }

  private async prepare(environment: string, runId: string): Promise<void> {
    const chunks = await this.engine.prepareRun(runId);
    if (chunks === null) return;
    if (chunks.length === 0) {
      await this.engine.finalizeRun(runId);
      return;
    }
    const queue = queueName(environment);
    // Job ids make a repeated prepare (after a crash) add nothing new.
    await this.flow?.add({
      name: 'finalize',
      queueName: queue,
      data: { runId },
      opts: { jobId: `finalize-${runId}`, removeOnComplete: 1000, removeOnFail: 1000 },
      children: chunks.map((c) => ({
        name: 'chunk',
        queueName: queue,
        data: c,
        opts: {
          jobId: `chunk-${runId}-${c.launch}-${c.chunk}`,
          attempts: CHUNK_ATTEMPTS,
          backoff: { type: 'exponential', delay: 1000 },
          ignoreDependencyOnFailure: true,
          removeOnComplete: true,
          removeOnFail: 1000,
        },
      })),
    });
  }

  private async chunk(ref: ChunkRef, jobSignal?: AbortSignal): Promise<void> {
    const controller = new AbortController();
    setMaxListeners(0, controller.signal);
    jobSignal?.addEventListener('abort', () => controller.abort(new RunInterrupted('shutdown')), {
      once: true,
    });
    let set = this.active.get(ref.runId);
    if (!set) {
      set = new Set();
      this.active.set(ref.runId, set);
    }
    set.add(controller);
    try {
      await store.takeChunk(this.db, ref, this.options.workerId);
      await this.engine.runChunk(ref, controller.signal);
      await store.completeChunk(this.db, ref, this.options.workerId);
    } catch (err) {
      // A cancelled run's chunk is done with: the finalize job then ends the run `cancelled`.
      if (err instanceof RunCancelled) return;
      if (err instanceof ScorerSetupError) await this.engine.failRun(ref.runId, err);
      throw err;
    } finally {
      set.delete(controller);
      if (set.size === 0) this.active.delete(ref.runId);
    }
  }

  async close(): Promise<void> {
    if (this.closing) return;
    this.closing = true;
    this.unsubscribe?.();
    if (this.heartbeat) clearInterval(this.heartbeat);
    for (const set of this.active.values()) for (const c of set) c.abort(new RunInterrupted('shutdown'));
    await Promise.all(this.workers.map((w) => w.close()));
    await this.flow?.close();
    await this.engine.close();
    await Promise.all(this.connections.map((r) => r.quit().catch(() => {})));
    await store.removeWorker(this.db, this.options.workerId).catch(() => {});
  }
}
