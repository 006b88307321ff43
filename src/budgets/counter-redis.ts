import type { Redis } from 'ioredis';
import { openRedis } from '../shared/redis.js';
import { type CounterDeps, counterId, type SpendCounter, SpendWriter } from './counter.js';
import { type CounterKey, storedSpend } from './repository.js';

/** A counter lives this long without use; it is seeded again from the database after. */
const TTL_MS = 35 * 86_400_000;

/**
 * Adds to each counter that exists and answers how many did not: those are left for their next read to
 * seed from the database (which has this cost by then).
 */
const ADD_IF_PRESENT =
  "local missing = 0 for _, k in ipairs(KEYS) do if redis.call('EXISTS', k) == 1 then redis.call('INCRBYFLOAT', k, ARGV[1]) else missing = missing + 1 end end return missing";

/** Adds to each counter that exists and answers its new value ('' for one that does not). */
const RESERVE =
  "local out = {} for i, k in ipairs(KEYS) do if redis.call('EXISTS', k) == 1 then out[i] = redis.call('INCRBYFLOAT', k, ARGV[1]) else out[i] = '' end end return out";

/**
 * Spend shared by every process of a scale-out deployment in Redis (one counter per scope and period,
 * added to with INCRBYFLOAT), kept in the database too: a counter missing from Redis (first use, expiry,
 * a flushed Redis) is seeded from there. While Redis cannot answer, the database answers alone.
 *
 * Redis then holds what the database holds plus what the processes have not stored yet. So that a Redis
 * restarted empty is rebuilt to what was recorded, never more:
 * - a seed reads the database while this process stores no batch (`SpendWriter.snapshot`);
 * - a cost Redis did not count (its counter gone, or Redis away) is stored in the database before the
 *   call answers, so that a seed by another process a moment later has it (a give-back of a reservation
 *   left behind would otherwise leave that process's seed over by the reservation);
 * - a command left unanswered when the connection dropped is not sent again to the Redis that comes
 *   back (the `counter` role): it was counted in the database, and a seed from there already has it.
 */
export async function createRedisCounter(
  deps: CounterDeps & { url: string; prefix: string },
): Promise<SpendCounter> {
  const redis: Redis = openRedis(deps.url, 'counter');
  // Redis away at start: the database answers until ioredis has reconnected.
  await redis.connect().catch(() => {});
  const name = (k: CounterKey) => `${deps.prefix}:budget:${counterId(k).replaceAll('\u0000', ':')}`;
  // The database is Redis's backup (seeding a counter Redis lost), written behind in batches.
  const writer = new SpendWriter(deps, 200);

  /** Seeds in progress, by counter: one database read for every caller that found it missing. */
  const seeding = new Map<string, Promise<number>>();

  function seed(key: CounterKey): Promise<number> {
    const id = counterId(key);
    let p = seeding.get(id);
    if (!p) {
      p = (async () => {
        const stored = await writer.snapshot(id, () => storedSpend(deps.db, key));
        await redis.set(name(key), String(stored), 'PX', TTL_MS, 'NX');
        const now = await redis.get(name(key));
        return now === null ? stored : Number(now);
      })();
      seeding.set(id, p);
      p.finally(() => seeding.delete(id)).catch(() => {});
    }
    return p;
  }

  async function read(keys: readonly CounterKey[]): Promise<number[]> {
    try {
      const got = await redis.mget(...keys.map(name));
      return await Promise.all(keys.map((k, i) => (got[i] == null ? seed(k) : Number(got[i]))));
    } catch (err) {
      deps.warn(`budget counters unavailable in Redis (${(err as Error).message}); read from the database`);
      return Promise.all(
        keys.map(async (k) => (await storedSpend(deps.db, k)) + writer.unwritten(counterId(k))),
      );
    }
  }

  /** A cost Redis did not count reaches the database before the caller goes on (see above). */
  const uncounted = () => writer.flush();

  return {
    read,
    add(keys, usd) {
      for (const key of keys) writer.add(counterId(key), key, usd);
      // One round trip for the key's and the project's counters; the next check anywhere sees the cost.
      return redis.eval(ADD_IF_PRESENT, keys.length, ...keys.map(name), String(usd)).then(
        (missing) => (Number(missing) > 0 ? uncounted() : undefined),
        (err: Error) => {
          deps.warn(`budget spend not counted in Redis: ${err.message}`);
          return uncounted();
        },
      );
    },
    async reserve(keys, usd) {
      // Seeded first, so that the script finds every counter.
      const before = await read(keys);
      for (const key of keys) writer.add(counterId(key), key, usd);
      try {
        const after = (await redis.eval(RESERVE, keys.length, ...keys.map(name), String(usd))) as string[];
        if (keys.some((_, i) => after[i] === undefined || after[i] === '')) await uncounted();
        return keys.map((_, i) => {
          const v = after[i];
          return v === undefined || v === '' ? (before[i] ?? 0) + usd : Number(v);
        });
      } catch (err) {
        deps.warn(`budget spend not reserved in Redis: ${(err as Error).message}`);
        await uncounted();
        return before.map((v) => v + usd);
      }
    },
    async close() {
      await writer.flush();
      redis.disconnect();
    },
  };
}
