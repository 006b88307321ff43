import { Redis, type RedisOptions } from 'ioredis';

/** Every Evalgate key in Redis starts with this (BullMQ's own prefix option). */
export const PREFIX = 'evalgate';
/** Cancellations and run ends, for every process of the deployment. */
export const CHANNEL = `${PREFIX}:runs`;

/** A run's jobs go to the queue of its environment: `runs-<environment>`. */
export function queueName(environment: string): string {
  return `runs-${environment}`;
}

export type RunMessage = { type: 'cancel'; runId: string };

/** BullMQ's workers block on Redis: their connections must retry commands forever. */
export function connect(url: string, options: RedisOptions = {}): Redis {
  return new Redis(url, { maxRetriesPerRequest: null, enableReadyCheck: true, ...options });
}
