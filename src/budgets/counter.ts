import type { Kysely } from 'kysely';
import type { Database } from '../db/schema.js';
import { addSpend, type CounterKey, storedSpend } from './repository.js';

/**
 * The running spend of each (scope, period). Every implementation keeps `budget_spend` up to date, so
 * that spend survives a restart and a lost Redis; they differ in where the value checked on each call
 * comes from: this process's memory (one process), the database (processes without Redis), Redis.
 */
export interface SpendCounter {
  /** The spend so far of each counter; synchronous when every one is at hand. */
  read(keys: readonly CounterKey[]): number[] | Promise<number[]>;
  /**
   * Adds a call's cost to each counter. Never throws (failures are warned about); the promise, when one
   * is returned, settles once other processes can see the cost.
   */
  add(keys: readonly CounterKey[], usd: number): Promise<void> | undefined;
  close(): Promise<void>;
}

export const counterId = (k: CounterKey) => `${k.scope}\u0000${k.scopeId}\u0000${k.periodStart}`;

/** What the counters share: the database, and where to tell of a write that failed. */
export interface CounterDeps {
  db: Kysely<Database>;
  warn(message: string): void;
}

/**
 * Spend held in this process's memory, for a server that is the only process spending (embedded mode):
 * seeded from the database on first use, each cost added at once, written behind in batches.
 */
export function createMemoryCounter(deps: CounterDeps, flushMs = 200): SpendCounter {
  const values = new Map<string, number>();
  const seeding = new Map<string, Promise<number>>();
  /** Deltas not yet written (`pending`) and being written (`writing`). */
  let pending = new Map<string, { key: CounterKey; usd: number }>();
  const writing = new Map<string, number>();
  let flushing: Promise<void> | null = null;
  let timer: NodeJS.Timeout | null = null;

  const unwritten = (id: string) => (pending.get(id)?.usd ?? 0) + (writing.get(id) ?? 0);

  async function flush(): Promise<void> {
    timer = null;
    if (flushing) await flushing;
    const batch = pending;
    pending = new Map();
    for (const [id, d] of batch) writing.set(id, (writing.get(id) ?? 0) + d.usd);
    flushing = (async () => {
      for (const [id, d] of batch) {
        try {
          await addSpend(deps.db, d.key, d.usd);
        } catch (err) {
          deps.warn(`budget spend not stored (${(err as Error).message}); kept in memory`);
        }
        const left = (writing.get(id) ?? 0) - d.usd;
        if (Math.abs(left) < 1e-15) writing.delete(id);
        else writing.set(id, left);
      }
    })();
    await flushing;
    flushing = null;
  }

  function seed(key: CounterKey, id: string): Promise<number> {
    let p = seeding.get(id);
    if (!p) {
      p = storedSpend(deps.db, key).then((stored) => {
        const value = stored + unwritten(id);
        if (values.size > 100_000) values.clear();
        values.set(id, value);
        return value;
      });
      p.finally(() => seeding.delete(id)).catch(() => {});
      seeding.set(id, p);
    }
    return p;
  }

  return {
    read(keys) {
      const out: number[] = [];
      for (const k of keys) {
        const v = values.get(counterId(k));
        if (v === undefined)
          return Promise.all(keys.map((key) => values.get(counterId(key)) ?? seed(key, counterId(key))));
        out.push(v);
      }
      return out;
    },
    add(keys, usd) {
      for (const key of keys) {
        const id = counterId(key);
        const v = values.get(id);
        if (v !== undefined) values.set(id, v + usd);
        const d = pending.get(id);
        if (d) d.usd += usd;
        else pending.set(id, { key, usd });
      }
      if (!timer) {
        timer = setTimeout(() => void flush(), flushMs);
        timer.unref();
      }
      return undefined;
    },
    async close() {
      if (timer) clearTimeout(timer);
      await flush();
    },
  };
}

/** Spend read from and added to the database on every call: processes that share no Redis. */
export function createDatabaseCounter(deps: CounterDeps): SpendCounter {
  const inFlight = new Set<Promise<void>>();
  return {
    read: (keys) => Promise.all(keys.map((k) => storedSpend(deps.db, k))),
    add(keys, usd) {
      const writes = keys.map((key) => {
        const p = addSpend(deps.db, key, usd).catch((err: Error) =>
          deps.warn(`budget spend not stored: ${err.message}`),
        );
        inFlight.add(p);
        void p.finally(() => inFlight.delete(p));
        return p;
      });
      return Promise.all(writes).then(() => {});
    },
    async close() {
      await Promise.all(inFlight);
    },
  };
}
