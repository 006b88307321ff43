import type { Kysely } from 'kysely';
import type { Database } from '../db/schema.js';
import { type CountedCall, Tally } from '../shared/tally.js';
import { addUsage } from './store/transitions.js';

export type CallKind = 'judge' | 'generation';

const KINDS: readonly CallKind[] = ['judge', 'generation'];

/**
 * The calls of a run counted in this process and not written yet, by kind: taken and added to the run's
 * counters in one statement.
 */
export const runTally = (): Tally<CallKind> => new Tally<CallKind>(KINDS);

/**
 * Counts the upstream calls a run pays for, in this process, and adds them to the run's counters in the
 * database by atomic increments, at most `flushMs` after each call returned (kept and retried while the
 * database is away). Counting happens when the call returns, before its result is used, so calls whose
 * results are later thrown away (a cancel, a chunk killed before storing its rows and asked again
 * elsewhere, an unparseable judge reply) are counted too: the run's spend is what the provider answered.
 */
export class Ledger {
  private readonly pending = runTally();
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
