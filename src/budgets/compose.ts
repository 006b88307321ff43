import type { Kysely } from 'kysely';
import type { Config } from '../config.js';
import type { Database } from '../db/schema.js';
import { createDatabaseCounter, createMemoryCounter, type SpendCounter } from './counter.js';
import { Budgets } from './service.js';

/**
 * The budgets of this process, on the counter its deployment needs: Redis when configured (shared by
 * every `serve` worker and run worker), the database when several processes share no Redis (`serve
 * --workers N`, PostgreSQL), this process's memory when it is the only one spending (embedded SQLite).
 */
export async function createBudgets(
  config: Pick<Config, 'redisUrl' | 'redisPrefix' | 'databaseUrl' | 'budgetCacheMs'>,
  db: Kysely<Database>,
  options: { cluster: boolean; warn(message: string): void; now?: () => number },
): Promise<Budgets> {
  const deps = { db, warn: options.warn };
  let counter: SpendCounter;
  if (config.redisUrl) {
    // Loaded only here, so that the embedded mode never needs the Redis driver.
    const { createRedisCounter } = await import('./counter-redis.js');
    counter = await createRedisCounter({ ...deps, url: config.redisUrl, prefix: config.redisPrefix });
  } else if (options.cluster || !config.databaseUrl.startsWith('sqlite')) {
    counter = createDatabaseCounter(deps);
  } else {
    counter = createMemoryCounter(deps);
  }
  return new Budgets({
    db,
    counter,
    cacheMs: config.budgetCacheMs,
    warn: options.warn,
    ...(options.now ? { now: options.now } : {}),
  });
}
