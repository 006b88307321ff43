import type { Kysely } from 'kysely';
import type { Database } from '../db/schema.js';
import { usd } from '../shared/numbers.js';
import { addUsage, type UsageDelta } from './store/transitions.js';

export type CallKind = 'judge' | 'generation';

const empty = (): UsageDelta => ({ calls: 0, unpriced: 0, cost: 0, prompt: 0, completion: 0 });

/** What calls cost, by kind: added to a run's counters in one statement. */
export type UsagePair = { judge: UsageDelta; generation: UsageDelta };

/** Where a run's call is counted once it returns. */
export interface UsageSink {
  add(
    kind: CallKind,
    usage: { prompt_tokens: number; completion_tokens: number } | null,
    cost: number,
    priced: boolean,
  ): void;
}

function count(
  d: UsageDelta,
  usage: { prompt_tokens: number; completion_tokens: number } | null,
  cost: number,
  priced: boolean,
): void {
  d.calls += 1;
  d.cost = usd(d.cost + cost);
  d.prompt += usage?.prompt_tokens ?? 0;
  d.completion += usage?.completion_tokens ?? 0;
  if (!priced) d.unpriced += 1;
}

function merge(into: UsagePair, delta: UsagePair): void {
  for (const kind of ['judge', 'generation'] as const) {
    for (const k of Object.keys(delta[kind]) as (keyof UsageDelta)[]) into[kind][k] += delta[kind][k];
  }
}

/**
 * The calls of one chunk not stored yet: taken and added to the run's counters in the transaction that
 * stores the rows they produced, so a process killed before that stores neither (and the chunk's
 * positions are asked again elsewhere, counted then).
 */
export class Tally implements UsageSink {
  private pending: UsagePair = { judge: empty(), generation: empty() };
  private dirty = false;

  add(
    kind: CallKind,
    usage: { prompt_tokens: number; completion_tokens: number } | null,
    cost: number,
    priced: boolean,
  ): void {
    count(this.pending[kind], usage, cost, priced);
    this.dirty = true;
  }

  /** What was counted since the last take (null: nothing). */
  take(): UsagePair | null {
    if (!this.dirty) return null;
    const out = this.pending;
    this.pending = { judge: empty(), generation: empty() };
    this.dirty = false;
    return out;
  }
}

/**
 * Counts upstream calls a run pays for that no stored row carries (the calls of a chunk that was
 * cancelled or interrupted before storing its rows), in this process, and adds it to the run's counters in the
 * database by atomic increments, at most `flushMs` after the call returned. Counting happens when the call
 * returns, before its result is used, so calls whose results are later thrown away (a cancel, a chunk
 * re-run after a crash elsewhere, an unparseable judge reply) are counted too.
 */
export class Ledger implements UsageSink {
  private pending = { judge: empty(), generation: empty() };
  private dirty = false;
  private timer: NodeJS.Timeout | null = null;
  private flushing: Promise<void> = Promise.resolve();

  constructor(
    private readonly db: Kysely<Database>,
    private readonly runId: string,
    private readonly flushMs: number,
    private readonly warn: (message: string) => void,
  ) {}

  add(
    kind: CallKind,
    usage: { prompt_tokens: number; completion_tokens: number } | null,
    cost: number,
    priced: boolean,
  ): void {
    count(this.pending[kind], usage, cost, priced);
    this.dirty = true;
    this.schedule(this.flushMs);
  }

  /** Adds what a chunk counted but could not store with its rows. */
  addDelta(delta: UsagePair | null): void {
    if (!delta) return;
    merge(this.pending, delta);
    this.dirty = true;
    this.schedule(this.flushMs);
  }

  private schedule(ms: number): void {
    if (this.timer) return;
    this.timer = setTimeout(() => {
      this.timer = null;
      void this.flush();
    }, ms);
    this.timer.unref();
  }

  /** Writes what was counted so far; concurrent flushes are chained so none is lost. */
  flush(): Promise<void> {
    this.flushing = this.flushing.then(async () => {
      if (!this.dirty) return;
      const delta = this.pending;
      this.pending = { judge: empty(), generation: empty() };
      this.dirty = false;
      try {
        await addUsage(this.db, this.runId, delta);
      } catch (err) {
        // Kept for the next flush: the counts must not be lost to a passing database error.
        merge(this.pending, delta);
        this.dirty = true;
        this.warn(`run ${this.runId}: could not store call counts (${(err as Error).message}); retrying`);
        this.schedule(Math.max(this.flushMs, 1000));
      }
    });
    return this.flushing;
  }

  async close(): Promise<void> {
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    await this.flush();
  }
}
