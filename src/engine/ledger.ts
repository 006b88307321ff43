import type { Kysely } from 'kysely';
import type { Database } from '../db/schema.js';
import { addUsage, type UsageDelta } from './store.js';

export type CallKind = 'judge' | 'generation';

const empty = (): UsageDelta => ({ calls: 0, unpriced: 0, cost: 0, prompt: 0, completion: 0 });

/**
 * Counts every upstream call a run pays for, in this process, and adds it to the run's counters in the
 * database by atomic increments, at most `flushMs` after the call returned. Counting happens when the call
 * returns, before its result is used, so calls whose results are later thrown away (a cancel, a chunk
 * re-run after a crash elsewhere, an unparseable judge reply) are counted too.
 */
export class Ledger {
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
    const d = this.pending[kind];
    d.calls += 1;
    d.cost += cost;
    d.prompt += usage?.prompt_tokens ?? 0;
    d.completion += usage?.completion_tokens ?? 0;
    if (!priced) d.unpriced += 1;
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
        for (const kind of ['judge', 'generation'] as const) {
          for (const k of Object.keys(delta[kind]) as (keyof UsageDelta)[])
            this.pending[kind][k] += delta[kind][k];
        }
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
