import { Queue } from 'bullmq';
import type { Redis } from 'ioredis';
import { Listeners, type RunQueue, type RunQueueListener } from '../engine/run-queue.js';
import { withTimeout } from '../shared/timeout.js';
import { channel, connect, queueName, type RunMessage } from './bullmq-shared.js';

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
  ) {}

  /** `environments`: the queues `depth` reports from the start. */
  static async connect(url: string, prefix: string, environments: string[]): Promise<BullRunQueue> {
    const redis = connect(url);
    const subscriber = connect(url);
    // Fail the start with a clear message rather than wait forever on a Redis that is not there.
    try {
      await reachable(redis, url);
    } catch (err) {
      redis.disconnect();
      subscriber.disconnect();
      throw err;
    }
    const queue = new BullRunQueue(redis, subscriber, prefix);
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
      this.queues.set(environment, q);
    }
    return q;
  }

  async submit(run: { id: string; environment: string }): Promise<void> {
    // The job id makes a resubmission of the same run a no-op.
    await this.queue(run.environment).add(
      'prepare',
      { runId: run.id },
      {
        jobId: `prepare-${run.id}`,
        attempts: 10,
        backoff: { type: 'exponential', delay: 1000 },
        removeOnComplete: 1000,
        removeOnFail: 1000,
      },
    );
    this.listeners.submitted(run.id, run.environment);
  }

  async cancel(runId: string): Promise<void> {
    const message: RunMessage = { type: 'cancel', runId };
    await this.redis.publish(channel(this.prefix), JSON.stringify(message));
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
