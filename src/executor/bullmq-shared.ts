import { Redis, type RedisOptions } from 'ioredis';

/** Cancellations, for every process of the deployment (under EVALGATE_REDIS_PREFIX). */
export function channel(prefix: string): string {
  return `${prefix}:runs`;
}

/** A run's jobs go to the queue of its environment: `runs-<environment>`. */
export function queueName(environment: string): string {
  return `runs-${environment}`;
}

export type RunMessage = { type: 'cancel'; runId: string };

/** BullMQ's workers block on Redis: their connections must retry commands forever. */
export function connect(url: string, options: RedisOptions = {}): Redis {
  const redis = new Redis(url, { maxRetriesPerRequest: null, enableReadyCheck: true, ...options });
  // ioredis reconnects by itself; what fails meanwhile surfaces as failed commands where it matters.
  redis.on('error', () => {});
  return redis;
}
