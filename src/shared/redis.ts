import { Redis, type RedisOptions } from 'ioredis';

/**
 * What a Redis connection is for, which decides how it behaves while Redis is away:
 * - `command`: checks on the request or call path (rate limits, model limits). No offline queue, one
 *   retry and a command timeout: while Redis is away a command fails at once (or within the timeout)
 *   instead of waiting for it; ioredis keeps reconnecting in the background.
 * - `counter`: a `command` connection for increments (budget spend). A command left unanswered when the
 *   connection dropped is not sent again once it is back: its caller was told it failed and counted it
 *   elsewhere, and a Redis that came back empty has been seeded with it since.
 * - `subscriber`: a pub/sub listener. It keeps its offline queue, so that it subscribes again after a
 *   reconnection.
 * - `blocking`: BullMQ's connections, which block on Redis and must retry commands forever.
 */
export type RedisRole = 'command' | 'counter' | 'subscriber' | 'blocking';

const ROLES: Record<RedisRole, RedisOptions> = {
  command: { lazyConnect: true, maxRetriesPerRequest: 1, enableOfflineQueue: false, commandTimeout: 2_000 },
  counter: {
    lazyConnect: true,
    maxRetriesPerRequest: 1,
    enableOfflineQueue: false,
    commandTimeout: 2_000,
    autoResendUnfulfilledCommands: false,
  },
  subscriber: { lazyConnect: true, maxRetriesPerRequest: 1, commandTimeout: 2_000 },
  blocking: { maxRetriesPerRequest: null, enableReadyCheck: true },
};

/**
 * The one place Redis clients are built (loaded lazily by its users: the embedded mode never needs the
 * driver). `commandTimeoutMs` overrides the role's timeout where a caller must answer sooner.
 * Connection errors are swallowed here: ioredis reconnects by itself, and what fails meanwhile
 * surfaces as failed commands where it matters.
 */
export function openRedis(url: string, role: RedisRole, commandTimeoutMs?: number): Redis {
  const options =
    commandTimeoutMs === undefined ? ROLES[role] : { ...ROLES[role], commandTimeout: commandTimeoutMs };
  const redis = new Redis(url, options);
  redis.on('error', () => {});
  return redis;
}
