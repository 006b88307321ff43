import type { Kysely } from 'kysely';
import type { CommittedLog } from '../capture/types.js';
import type { Database } from '../db/schema.js';
import type { RunQueue } from '../executor/run-queue.js';
import * as repo from './repository.js';
import { selectThrough } from './selection.js';
import { sweepSessions } from './session-sweep.js';

export interface MonitorSelectorOptions {
  db: Kysely<Database>;
  queue: RunQueue;
  chunkSize: number;
  /** How often the catch-up pass looks for calls committed but never selected (0: only at `start`). */
  catchUpMs: number;
  warn(message: string): void;
  /** Told of each monitor's new chunks (metrics). */
  selected?(monitorId: string, count: number): void;
}

/**
 * The log writer's listener: each committed batch is matched against the enabled monitors of its
 * containers, off the request path and one batch at a time. Failures are reported, never thrown: the
 * calls were answered and recorded whatever happens here.
 *
 * Selection moves each monitor's high-water mark (the last seq of its container considered) in the
 * transaction that stores what it chose, so nothing committed is lost if this process dies before
 * selecting a batch: the next batch's selection (in any process) reads the gap from the database, and a
 * catch-up pass (at `start`, then every `catchUpMs`) selects what is still past the mark.
 */
export class MonitorSelector {
  private tail: Promise<void> = Promise.resolve();
  private pending = 0;
  private failing = false;
  private timer: NodeJS.Timeout | null = null;
  /** Each lagging monitor's container end seen by the previous pass (its own selection had time since). */
  private seen = new Map<string, number>();

  constructor(private readonly options: MonitorSelectorOptions) {}

  /** Takes a committed batch; returns at once. */
  committed(logs: CommittedLog[]): void {
    this.enqueue(() => this.select(logs));
  }

  /** Catches up at once (what a dead process left), then every `catchUpMs`. */
  start(): void {
    this.enqueue(() => this.catchUp(true).then(() => undefined));
    if (this.options.catchUpMs <= 0) return;
    this.timer = setInterval(() => {
      if (this.pending === 0) this.enqueue(() => this.catchUp(false).then(() => undefined));
    }, this.options.catchUpMs);
    this.timer.unref();
  }

  private enqueue(work: () => Promise<void>): void {
    this.pending++;
    this.tail = this.tail
      .then(work)
      .then(() => {
        this.failing = false;
      })
      .catch((err: unknown) => {
        if (!this.failing) this.options.warn(`monitors: selection failed: ${(err as Error).message}`);
        this.failing = true;
      })
      .finally(() => {
        this.pending--;
      });
  }

  private async select(logs: CommittedLog[]): Promise<void> {
    const { db, queue, chunkSize } = this.options;
    const byContainer = new Map<string, CommittedLog[]>();
    for (const log of logs) {
      const list = byContainer.get(log.containerId);
      if (list) list.push(log);
      else byContainer.set(log.containerId, [log]);
    }
    const monitors = await repo.enabledMonitors(db, [...byContainer.keys()]);
    for (const monitor of monitors) {
      const batch = (byContainer.get(monitor.container_id) ?? []).sort((a, b) => a.seq - b.seq);
      const through = batch.at(-1)?.seq;
      if (through === undefined) continue;
      const chunks = await selectThrough(db, queue, monitor, through, chunkSize, batch);
      const count = chunks.reduce((n, c) => n + c.to - c.from, 0);
      if (count > 0) this.options.selected?.(monitor.id, count);
    }
  }

  /**
   * Selects the calls committed past each enabled monitor's mark. `now`: up to the container's present
   * end; otherwise up to the end the previous pass saw, so that a live writer's own selection of a
   * batch it has just committed is not taken over. Returns the number of calls selected.
   */
  async catchUp(now: boolean): Promise<number> {
    const { db, queue, chunkSize } = this.options;
    const lagging = await repo.laggingMonitors(db);
    const seen = new Map<string, number>();
    let count = 0;
    for (const monitor of lagging) {
      seen.set(monitor.id, monitor.container_end);
      const through = now ? monitor.container_end : this.seen.get(monitor.id);
      if (through === undefined) continue;
      const chunks = await selectThrough(db, queue, monitor, through, chunkSize);
      const n = chunks.reduce((sum, c) => sum + c.to - c.from, 0);
      if (n > 0) this.options.selected?.(monitor.id, n);
      count += n;
    }
    this.seen = seen;
    // Session monitors: the sessions idle long enough since the last pass.
    count += await sweepSessions(db, queue, chunkSize, Date.now(), this.options.selected);
    return count;
  }

  /** Resolves once every batch (and catch-up pass) taken so far is handled. */
  async idle(): Promise<void> {
    while (this.pending > 0) await this.tail;
  }

  /** Stops the catch-up passes (what is under way finishes: see `idle`). */
  stop(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
  }
}
