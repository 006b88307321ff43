import { Queue } from 'bullmq';
import type { Redis } from 'ioredis';
import type { Kysely } from 'kysely';
import type { Database } from '../db/schema.js';
import { openRedis } from '../shared/redis.js';
import { withTimeout } from '../shared/timeout.js';
import {
  CHUNK_JOB_OPTIONS,
  channel,
  chunkJobId,
  PREPARE_OPTIONS,
  prepareJobId,
  queueName,
  type RunMessage,
} from './bullmq-shared.js';
import { JOB_CHECK_TIMEOUT_MS, liveRuns, runsWithoutJobs } from './reconciler.js';
import {
  Listeners,
  type QueuedChunk,
  QueueUnavailable,
  type RunQueue,
  type RunQueueListener,
} from './run-queue.js';

/**
 * The scale-out run queue on BullMQ: submitting adds a `prepare` job to the queue of the run's
 * environment (a worker of that environment prepares the run and adds its flow of chunk jobs);
 * cancelling publishes on a Redis channel every worker listens to, so running chunks stop within
 * about a second wherever they are.
 */
export class BullRunQueue implements RunQueue {
  private readonly queues = new Map<string, Queue>();
  private readonly listeners = new Listeners();

  private constructor(
    private readonly redis: Redis,
    private readonly subscriber: Redis,
    private readonly prefix: string,
    private readonly db: Kysely<Database>,
    private readonly environments: string[],
    private readonly submitTimeoutMs: number,
  ) {}

  /** `environments`: the queues `depth` reports from the start. */
  static async connect(
    url: string,
    prefix: string,
    environments: string[],
    db: Kysely<Database>,
    submitTimeoutMs: number,
  ): Promise<BullRunQueue> {
    const redis = openRedis(url, 'blocking');
    const subscriber = openRedis(url, 'blocking');
    // Fail the start with a clear message rather than wait forever on a Redis that is not there.
    try {
      await reachable(redis, url);
    } catch (err) {
      redis.disconnect();
      subscriber.disconnect();
      throw err;
    }
    const queue = new BullRunQueue(redis, subscriber, prefix, db, environments, submitTimeoutMs);
    for (const env of environments) queue.queue(env);
    await subscriber.subscribe(channel(prefix));
    subscriber.on('message', (_channel: string, text: string) => {
      try {
        const message = JSON.parse(text) as RunMessage;
        if (message.type === 'cancel') queue.listeners.cancelled(message.runId);
      } catch {
        // Not ours: ignore.
      }
    });
    return queue;
  }

  private queue(environment: string): Queue {
    let q = this.queues.get(environment);
    if (!q) {
      q = new Queue(queueName(environment), { connection: this.redis, prefix: this.prefix });
      // Redis away shows as failed or late commands where it matters (submit, health), not as noise.
      q.on('error', () => {});
      this.queues.set(environment, q);
    }
    return q;
  }

  /**
   * Adds the run's `prepare` job; throws QueueUnavailable when Redis does not take it within the submit
   * timeout. The add stays pending on the connection and goes through once Redis is back (and the
   * executors' reconciler submits any live run without its job): the run runs later either way.
   */
  async submit(run: { id: string; environment: string }): Promise<void> {
    // The job id makes a resubmission of the same run a no-op.
    const added = this.queue(run.environment).add(
      'prepare',
      { runId: run.id },
      { jobId: prepareJobId(run.id), ...PREPARE_OPTIONS },
    );
    added.catch(() => {});
    try {
      await withTimeout(added, this.submitTimeoutMs, 'Redis did not take the run in time');
    } catch (err) {
      throw new QueueUnavailable((err as Error).message);
    }
    this.listeners.submitted(run.id, run.environment);
  }

  /** One `chunk` job, outside any flow: nothing finalizes a monitor's run when its chunks are done. */
  async submitChunk(chunk: QueuedChunk, environment: string): Promise<void> {
    // The job id makes a resubmission of the same chunk a no-op.
    await this.queue(environment).add('chunk', chunk, {
      jobId: chunkJobId(chunk.runId, chunk.launch, chunk.chunk),
      ...CHUNK_JOB_OPTIONS,
    });
  }

  /** Best effort within the submit timeout: the flag in the database stops the run's chunks anyway. */
  async cancel(runId: string): Promise<void> {
    const message: RunMessage = { type: 'cancel', runId };
    const published = this.redis.publish(channel(this.prefix), JSON.stringify(message));
    published.catch(() => {});
    try {
      await withTimeout(published, this.submitTimeoutMs, 'Redis did not take the cancellation in time');
    } catch (err) {
      throw new QueueUnavailable((err as Error).message);
    }
  }

  async lostRuns(): Promise<string[]> {
    const runs = await liveRuns(this.db, this.environments, 200);
    const lost = await withTimeout(
      runsWithoutJobs((env) => this.queue(env), runs),
      JOB_CHECK_TIMEOUT_MS,
      'Redis did not answer',
    );
    return lost.map((r) => r.id);
  }

  async depth(): Promise<Record<string, { waiting: number; active: number; delayed: number }>> {
    const out: Record<string, { waiting: number; active: number; delayed: number }> = {};
    for (const [env, q] of this.queues) {
      const c = await q.getJobCounts('waiting', 'active', 'delayed', 'waiting-children');
      out[env] = { waiting: c.waiting ?? 0, active: c.active ?? 0, delayed: c.delayed ?? 0 };
    }
    return out;
  }

  subscribe(listener: RunQueueListener): () => void {
    return this.listeners.add(listener);
  }

  async close(): Promise<void> {
    await Promise.all([...this.queues.values()].map((q) => q.close()));
    await this.subscriber.quit().catch(() => {});
    await this.redis.quit().catch(() => {});
  }
}

const CONNECT_TIMEOUT_MS = 10_000;

function reachable(redis: Redis, url: string): Promise<unknown> {
  return withTimeout(
    redis.ping(),
    CONNECT_TIMEOUT_MS,
    `Redis at ${new URL(url).host} did not answer within ${CONNECT_TIMEOUT_MS / 1000} s; ` +
      'EVALGATE_EXECUTOR=bullmq needs it (check EVALGATE_REDIS_URL)',
  );
}
