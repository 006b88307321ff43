import { setMaxListeners } from 'node:events';
import { FlowProducer, type Job, Worker } from 'bullmq';
import type { Redis } from 'ioredis';
import type { Kysely } from 'kysely';
import type { Database } from '../db/schema.js';
import { RunCancelled, RunInterrupted } from '../engine/errors.js';
import type { ChunkRef, Engine } from '../engine/work.js';
import { ScorerSetupError } from '../scoring/types.js';
import { openRedis } from '../shared/redis.js';
import { CHUNK_JOB_OPTIONS, chunkJobId, finalizeJobId, queueName } from './bullmq-shared.js';
import { takeChunk } from './leases.js';
import { Reconciler } from './reconciler.js';
import type { RunQueue } from './run-queue.js';
import type { Executor, ExecutorOptions } from './types.js';
import { heartbeatWorker, registerWorker, removeWorker } from './workers.js';

type JobData = { runId: string } | ChunkRef;

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
  private reconciler: Reconciler | null = null;
  private closing = false;

  constructor(
    private readonly db: Kysely<Database>,
    private readonly engine: Engine,
    private readonly queue: RunQueue,
    private readonly redis: { url: string; prefix: string },
    private readonly options: ExecutorOptions,
  ) {}

  private connection(): Redis {
    const redis = openRedis(this.redis.url, 'blocking');
    this.connections.push(redis);
    return redis;
  }

  async start(): Promise<void> {
    const o = this.options;
    await registerWorker(this.db, {
      id: o.workerId,
      environments: o.environments,
      executor: 'bullmq',
      host: o.host,
      concurrency: o.concurrency,
    });
    this.unsubscribe = this.queue.subscribe({
      cancelled: (runId) => {
        for (const c of this.active.get(runId) ?? []) c.abort(new RunCancelled(runId));
      },
    });
    this.flow = new FlowProducer({ connection: this.connection(), prefix: this.redis.prefix });
    this.flow.on('error', (err) => o.warn(`bullmq flow producer: ${err.message}`));
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
      heartbeatWorker(this.db, o.workerId).catch((err: Error) => o.warn(`worker heartbeat: ${err.message}`));
    }, 1000);
    this.heartbeat.unref();
    this.reconciler = new Reconciler(this.db, this.engine, {
      url: this.redis.url,
      prefix: this.redis.prefix,
      environments: o.environments,
      workerId: o.workerId,
      intervalMs: o.reconcileMs,
      warn: o.warn,
    });
    this.reconciler.start();
  }

  private async process(environment: string, job: Job<JobData>, signal?: AbortSignal): Promise<void> {
    if (job.name === 'prepare') return this.prepare(environment, job.data.runId);
    if (job.name === 'finalize') {
      await this.engine.finalizeRun(job.data.runId);
      return;
    }
    if (job.name === 'chunk' && 'chunk' in job.data) {
      // On the job's last attempt a failure leaves the chunk out of its run, with its positions as errors.
      const attempts = job.opts.attempts ?? 1;
      return this.chunk(job.data, signal, job.attemptsMade + 1 >= attempts ? attempts : null);
    }
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
      opts: { jobId: finalizeJobId(runId), removeOnComplete: 1000, removeOnFail: 1000 },
      children: chunks.map((c) => ({
        name: 'chunk',
        queueName: queue,
        data: c,
        opts: {
          jobId: chunkJobId(runId, c.launch, c.chunk),
          ...CHUNK_JOB_OPTIONS,
          ignoreDependencyOnFailure: true,
        },
      })),
    });
  }

  private async chunk(ref: ChunkRef, jobSignal?: AbortSignal, lastOf: number | null = null): Promise<void> {
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
      await takeChunk(this.db, ref, this.options.workerId);
      await this.engine.runChunk(ref, controller.signal);
      // The run's finalize job (the parent of its chunk jobs) finalizes it once every chunk is done.
      await this.engine.completeChunk(ref, this.options.workerId);
    } catch (err) {
      // A cancelled run's chunk is done with: the finalize job then ends the run `cancelled`.
      if (err instanceof RunCancelled) return;
      if (err instanceof ScorerSetupError) await this.engine.failRun(ref.runId, err);
      else if (lastOf !== null && !(err instanceof RunInterrupted)) {
        await this.engine
          .giveUpChunk(ref, lastOf, err)
          .catch((e: Error) => this.options.warn(`run ${ref.runId} chunk ${ref.chunk}: ${e.message}`));
      }
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
    await this.reconciler?.close();
    for (const set of this.active.values()) for (const c of set) c.abort(new RunInterrupted('shutdown'));
    await Promise.all(this.workers.map((w) => w.close()));
    await this.flow?.close();
    await this.engine.close();
    await Promise.all(this.connections.map((r) => r.quit().catch(() => {})));
    await removeWorker(this.db, this.options.workerId).catch(() => {});
  }
}
