import type { Kysely } from 'kysely';
import type { Database } from '../db/schema.js';
import { type CountedCall, Tally, type TallyCounts } from '../shared/tally.js';
import { addUsage } from './store/transitions.js';

export type CallKind = 'judge' | 'generation';

const KINDS: readonly CallKind[] = ['judge', 'generation'];

/** What calls cost, by kind: added to a run's counters in one statement. */
export type UsagePair = Record<CallKind, TallyCounts>;

/** Where a run's call is counted once it returns (a chunk's tally, or the run's ledger). */
export interface UsageSink {
  add(kind: CallKind, call: CountedCall): void;
}

/**
 * The calls of one chunk not stored yet: taken and added to the run's counters in the transaction that
 * stores the rows they produced, so a process killed before that stores neither (and the chunk's
 * positions are asked again elsewhere, counted then).
 */
export const chunkTally = (): Tally<CallKind> => new Tally<CallKind>(KINDS);

/**
 * Counts upstream calls a run pays for that no stored row carries (the calls of a chunk that was
 * cancelled or interrupted before storing its rows), in this process, and adds it to the run's counters in the
 * database by atomic increments, at most `flushMs` after the call returned. Counting happens when the call
 * returns, before its result is used, so calls whose results are later thrown away (a cancel, a chunk
 * re-run after a crash elsewhere, an unparseable judge reply) are counted too.
 */
export class Ledger implements UsageSink {
  private readonly pending = chunkTally();
  private timer: NodeJS.Timeout | null = null;
  private flushing: Promise<void> = Promise.resolve();

  constructor(
    private readonly db: Kysely<Database>,
    private readonly runId: string,
    private readonly flushMs: number,
    private readonly warn: (message: string) => void,
  ) {}

  add(kind: CallKind, call: CountedCall): void {
    this.pending.add(kind, call);
    this.schedule(this.flushMs);
  }

  /** Adds what a chunk counted but could not store with its rows. */
  addDelta(delta: UsagePair | null): void {
    if (!delta) return;
    this.pending.merge(delta);
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
      const delta = this.pending.take();
      if (!delta) return;
      try {
        await addUsage(this.db, this.runId, delta);
      } catch (err) {
        // Kept for the next flush: the counts must not be lost to a passing database error.
        this.pending.merge(delta);
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
