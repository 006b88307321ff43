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
  /**
   * Adds `usd` to each counter and answers each counter's value right after (this addition and every one
   * made before it included): concurrent reservations see each other, in the order they were made.
   */
  reserve(keys: readonly CounterKey[], usd: number): number[] | Promise<number[]>;
  close(): Promise<void>;
}

export const counterId = (k: CounterKey) => `${k.scope}\u0000${k.scopeId}\u0000${k.periodStart}`;

/** What the counters share: the database, and where to tell of a write that failed. */
export interface CounterDeps {
  db: Kysely<Database>;
  warn(message: string): void;
}

/**
 * Costs written to `budget_spend` behind the calls, in batches (one upsert per counter per batch). A batch
 * that could not be written is kept and tried again with the next one.
 */
export class SpendWriter {
  private pending = new Map<string, { key: CounterKey; usd: number }>();
  private readonly writing = new Map<string, number>();
  private queue: Promise<void> = Promise.resolve();
  private timer: NodeJS.Timeout | null = null;

  constructor(
    private readonly deps: CounterDeps,
    private readonly flushMs: number,
  ) {}

  add(id: string, key: CounterKey, usd: number): void {
    const d = this.pending.get(id);
    if (d) d.usd += usd;
    else this.pending.set(id, { key, usd });
    if (!this.timer) {
      this.timer = setTimeout(() => void this.flush(), this.flushMs);
      this.timer.unref();
    }
  }

  /** What this process added to a counter and has not stored yet. */
  unwritten(id: string): number {
    return (this.pending.get(id)?.usd ?? 0) + (this.writing.get(id) ?? 0);
  }

  /**
   * What the database holds for a counter plus what this process has not stored yet, read while no batch
   * is being written: a batch stored during the read would otherwise be counted twice (in the database
   * and still in `writing`) or not at all. For seeding a counter (rare), not for every call.
   */
  snapshot(id: string, stored: () => Promise<number>): Promise<number> {
    return this.serially(async () => (await stored()) + this.unwritten(id));
  }

  flush(): Promise<void> {
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    return this.serially(() => this.write());
  }

  /** Batches and snapshots one at a time, in the order asked for. */
  private serially<T>(task: () => Promise<T>): Promise<T> {
    const run = this.queue.then(task, task);
    this.queue = run.then(
      () => {},
      () => {},
    );
    return run;
  }

  private async write(): Promise<void> {
    const batch = this.pending;
    this.pending = new Map();
    for (const [id, d] of batch) this.writing.set(id, (this.writing.get(id) ?? 0) + d.usd);
    let failed = false;
    for (const [id, d] of batch) {
      try {
        await addSpend(this.deps.db, d.key, d.usd);
      } catch (err) {
        if (!failed) this.deps.warn(`budget spend not stored yet (${(err as Error).message}); retrying`);
        failed = true;
        this.add(id, d.key, d.usd);
      }
      const left = (this.writing.get(id) ?? 0) - d.usd;
      if (Math.abs(left) < 1e-15) this.writing.delete(id);
      else this.writing.set(id, left);
    }
  }
}

/**
 * Spend held in this process's memory, for a server that is the only process spending (embedded mode):
 * seeded from the database on first use, each cost added at once, written behind in batches.
 */
export function createMemoryCounter(deps: CounterDeps, flushMs = 200): SpendCounter {
  const values = new Map<string, number>();
  const seeding = new Map<string, Promise<number>>();
  const writer = new SpendWriter(deps, flushMs);

  function seed(key: CounterKey, id: string): Promise<number> {
    let p = seeding.get(id);
    if (!p) {
      p = writer
        .snapshot(id, () => storedSpend(deps.db, key))
        .then((value) => {
          if (values.size > 100_000) values.clear();
          values.set(id, value);
          return value;
        });
      p.finally(() => seeding.delete(id)).catch(() => {});
      seeding.set(id, p);
    }
    return p;
  }

  function read(keys: readonly CounterKey[]): number[] | Promise<number[]> {
    const out: number[] = [];
    for (const k of keys) {
      const v = values.get(counterId(k));
      if (v === undefined)
        return Promise.all(keys.map((key) => values.get(counterId(key)) ?? seed(key, counterId(key))));
      out.push(v);
    }
    return out;
  }

  function add(keys: readonly CounterKey[], usd: number): undefined {
    for (const key of keys) {
      const id = counterId(key);
      const v = values.get(id);
      if (v !== undefined) values.set(id, v + usd);
      writer.add(id, key, usd);
    }
    return undefined;
  }

  return {
    read,
    add,
    reserve(keys, usd) {
      // Added and read in one synchronous step (after seeding): no other reservation comes between.
      const apply = (before: number[]) => {
        add(keys, usd);
        return keys.map((k, i) => values.get(counterId(k)) ?? (before[i] ?? 0) + usd);
      };
      const before = read(keys);
      return before instanceof Promise ? before.then(apply) : apply(before);
    },
    close: () => writer.flush(),
  };
}

/**
 * Spend read from and added to the database on every call: processes that share no Redis. A cost the
 * database could not take (it is away) is kept and written again, never dropped, and counted in this
 * process's reads meanwhile.
 */
export function createDatabaseCounter(deps: CounterDeps, retryMs = 1000): SpendCounter {
  const inFlight = new Set<Promise<void>>();
  const retry = new SpendWriter(deps, retryMs);
  return {
    read: (keys) =>
      Promise.all(keys.map(async (k) => (await storedSpend(deps.db, k)) + retry.unwritten(counterId(k)))),
    add(keys, usd) {
      const writes = keys.map((key) => {
        const p = addSpend(deps.db, key, usd).then(
          () => {},
          (err: Error) => {
            deps.warn(`budget spend not stored yet (${err.message}); retrying`);
            retry.add(counterId(key), key, usd);
          },
        );
        inFlight.add(p);
        void p.finally(() => inFlight.delete(p));
        return p;
      });
      return Promise.all(writes).then(() => {});
    },
    // One upsert per counter, answering the value it left: PostgreSQL and SQLite serialize them.
    reserve: (keys, usd) => Promise.all(keys.map((k) => addSpend(deps.db, k, usd))),
    async close() {
      await Promise.all(inFlight);
      await retry.flush();
    },
  };
}
