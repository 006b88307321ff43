import { setImmediate as yieldLoop } from 'node:timers/promises';
import { isDatabaseUnavailable } from '../db/database.js';

export interface SpanWriterStats {
  accepted: number;
  written: number;
  /** Dropped: past the bound, refused by the database for another reason than an outage, or held at close. */
  failed: number;
  buffered: number;
}

/**
 * Where the lane writes down what it takes before taking it (the span spool, `span-replay.ts`), so that
 * what an export was answered for survives a kill of the process.
 */
export interface SpanJournal<T> {
  /**
   * Writes `items[from, to)` down; `taken`: the lane's count of items taken once they are. False: they
   * could not be written, and the lane refuses them.
   */
  record(items: readonly T[], from: number, to: number, taken: number): boolean;
  /** The first `done` items taken are stored or given up (the lane takes and writes them in order). */
  settled(done: number): void;
}

/**
 * The span store could not take a batch for a reason of its own that passes (its thread stopped): the
 * lane keeps the batch and retries it, as through a database outage.
 */
export class SpanStoreUnavailableError extends Error {
  override name = 'SpanStoreUnavailableError';
}

/**
 * The span sink: stores one batch; a database outage (see `isDatabaseUnavailable`) or a
 * `SpanStoreUnavailableError` keeps it to retry.
 */
export type SpanSink<T> = (batch: T[]) => Promise<void>;

/** How the lane batches: the same settings as the task-log writer's. */
export interface SpanLaneSettings {
  batchSize: number;
  flushMs: number;
  /**
   * Items held at most (through an outage too); past it `write` refuses, except a write into an empty
   * buffer, which is always taken whole.
   */
  maxBuffered: number;
  retryMs?: number;
}

export interface SpanLaneOptions<T> extends SpanLaneSettings {
  /** The sink (left out: attached later with `attach`; until then nothing is stored). */
  store?: SpanSink<T>;
  /** Items are written down here before they are taken (none: they live in memory only until stored). */
  journal?: SpanJournal<T>;
  warn?: (message: string) => void;
}

/** A second sink attached to a lane that has one. */
export class SpanSinkAttachedError extends Error {
  constructor() {
    super('The span lane has its sink already');
    this.name = 'SpanSinkAttachedError';
  }
}

/**
 * The capture processor's span lane (the spans ingested over OTLP): accepts items without waiting, hands
 * them to its sink in batches (size or time, whichever first) one batch at a time, holds them through a
 * database outage and retries, refuses past a bound so that the caller can answer "retry later", and
 * flushes on close.
 */
export interface SpanLane<T> {
  /**
   * False when the buffer is too full for `items`, or the journal cannot write them down (nothing of them
   * was taken); an empty buffer takes any.
   */
  write(items: T[]): boolean;
  /**
   * Takes `items` in parts, each as room frees in the buffer (never past its bound), waiting for the
   * writes between parts: true once all are taken; false when no room frees for `waitMs`, the lane
   * closes, `signal` aborts or the journal cannot write a part down (what was taken stays taken: a span
   * sent again is stored once).
   */
  writeAll(items: readonly T[], waitMs: number, signal?: AbortSignal): Promise<boolean>;
  /**
   * Gives the lane its sink, for a sink built after the processor (the trace service's, which records
   * model-call spans through the processor); throws `SpanSinkAttachedError` when it has one.
   */
  attach(store: SpanSink<T>): void;
  /** Whether the lane has its sink. */
  readonly attached: boolean;
  /** The items the buffer holds at most (`maxBuffered`). */
  readonly bound: number;
  /** Resolves once what is buffered is stored or given up (at once without a sink). */
  flush(): Promise<void>;
  stats(): SpanWriterStats;
  /** Flushes, then gives up what is still held (the database away): counted as failed. */
  close(): Promise<void>;
}

/** Resolves when room frees (one of `waiters` is called), after `ms`, or when `signal` aborts. */
function waitForRoom(waiters: (() => void)[], ms: number, signal: AbortSignal | undefined): Promise<void> {
  return new Promise<void>((resolve) => {
    const done = () => {
      clearTimeout(timeout);
      signal?.removeEventListener('abort', done);
      resolve();
    };
    const timeout = setTimeout(done, ms);
    signal?.addEventListener('abort', done, { once: true });
    waiters.push(done);
  });
}

/** The lane's state and steps; `createSpanLane` hands out its methods. */
class Lane<T> {
  readonly buffer: T[] = [];
  /** The counts kept as items pass; `buffered` is the buffer's length, read when asked. */
  readonly counts: Omit<SpanWriterStats, 'buffered'> = { accepted: 0, written: 0, failed: 0 };
  sink: SpanSink<T> | null;
  private readonly retryMs: number;
  private timer: NodeJS.Timeout | null = null;
  running: Promise<void> | null = null;
  closed = false;
  private down = false;
  private waiters: (() => void)[] = [];
  /** Callers of writeAll waiting for room in the buffer. */
  readonly roomWaiters: (() => void)[] = [];

  constructor(private readonly options: SpanLaneOptions<T>) {
    this.sink = options.store ?? null;
    this.retryMs = options.retryMs ?? 500;
  }

  roomFreed(): void {
    for (const f of this.roomWaiters.splice(0)) f();
  }

  private settle(): void {
    if (this.buffer.length > 0 && !this.down) return;
    const w = this.waiters;
    this.waiters = [];
    for (const f of w) f();
  }

  schedule(delay: number): void {
    if (this.timer || this.running || !this.sink) return;
    this.timer = setTimeout(() => {
      this.timer = null;
      void this.drain();
    }, delay);
    this.timer.unref?.();
  }

  stopTimer(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
  }

  /** One batch handed to the sink: false when the database is away (the batch is kept, to retry). */
  private async writeBatch(sink: SpanSink<T>): Promise<boolean> {
    const { buffer, counts, options } = this;
    const batch = buffer.slice(0, options.batchSize);
    try {
      await sink(batch);
      buffer.splice(0, batch.length);
      counts.written += batch.length;
      options.journal?.settled(counts.written + counts.failed);
      this.roomFreed();
      if (this.down) options.warn?.('The trace store is writing again after a database outage');
      this.down = false;
      return true;
    } catch (err) {
      if ((isDatabaseUnavailable(err) || err instanceof SpanStoreUnavailableError) && !this.closed) {
        if (!this.down)
          options.warn?.(`Spans are held while the database is unavailable: ${(err as Error).message}`);
        this.down = true;
        return false;
      }
      buffer.splice(0, batch.length);
      counts.failed += batch.length;
      options.journal?.settled(counts.written + counts.failed);
      this.roomFreed();
      options.warn?.(
        `The database refused ${batch.length} spans, which are dropped: ${(err as Error).message}`,
      );
      return true;
    }
  }

  async drain(): Promise<void> {
    const { sink } = this;
    if (!sink) return;
    if (this.running) return this.running;
    this.running = (async () => {
      while (this.buffer.length > 0) {
        if (!(await this.writeBatch(sink))) break;
        // A turn of the event loop between batches: on SQLite a batch is synchronous work on this thread,
        // and a backlog of them written back to back (a large export) would hold every request the
        // gateway is answering until the last one.
        if (this.buffer.length > 0) await yieldLoop();
      }
    })();
    try {
      await this.running;
    } finally {
      this.running = null;
      if (this.buffer.length > 0) this.schedule(this.down ? this.retryMs : 0);
      this.settle();
    }
  }

  /** Takes `items[from, to)`, written down first; false when they could not be (nothing taken). */
  push(items: readonly T[], from: number, to: number): boolean {
    const { buffer, counts, options } = this;
    if (options.journal && !options.journal.record(items, from, to, counts.accepted + to - from))
      return false;
    for (let i = from; i < to; i++) buffer.push(items[i] as T);
    counts.accepted += to - from;
    if (buffer.length >= options.batchSize && !this.running) {
      this.stopTimer();
      void this.drain();
    } else this.schedule(options.flushMs);
    return true;
  }

  async writeAll(items: readonly T[], waitMs: number, signal?: AbortSignal): Promise<boolean> {
    let taken = 0;
    // Since when no room has freed: the wait is for progress, not for the whole of a large write.
    let since: number | null = null;
    while (taken < items.length) {
      if (this.closed || signal?.aborted) return false;
      const free = Math.min(this.options.maxBuffered - this.buffer.length, items.length - taken);
      if (free > 0) {
        if (!this.push(items, taken, taken + free)) return false;
        taken += free;
        since = null;
        continue;
      }
      since ??= Date.now();
      const left = since + waitMs - Date.now();
      if (left <= 0) return false;
      await waitForRoom(this.roomWaiters, left, signal);
    }
    return true;
  }

  async flush(): Promise<void> {
    if (!this.sink || (this.buffer.length === 0 && !this.running)) return;
    const done = new Promise<void>((resolve) => this.waiters.push(resolve));
    this.stopTimer();
    void this.drain();
    await done;
  }

  async close(): Promise<void> {
    await this.flush();
    this.closed = true;
    this.roomFreed();
    this.stopTimer();
    if (this.buffer.length > 0) {
      this.counts.failed += this.buffer.length;
      this.buffer.length = 0;
    }
  }
}

export function createSpanLane<T>(options: SpanLaneOptions<T>): SpanLane<T> {
  const lane = new Lane(options);
  return {
    write(items) {
      // A request larger than the bound is taken when nothing else is held (the request's own size is
      // bounded by the body limit), so that it can always succeed: refusing it whatever the buffer holds
      // would answer 503 to an export that no retry could ever get through.
      const held = lane.buffer.length;
      if (lane.closed || (held > 0 && held + items.length > options.maxBuffered)) return false;
      return lane.push(items, 0, items.length);
    },
    writeAll: (items, waitMs, signal) => lane.writeAll(items, waitMs, signal),
    attach(store) {
      if (lane.sink) throw new SpanSinkAttachedError();
      lane.sink = store;
      if (lane.buffer.length > 0) lane.schedule(0);
    },
    get attached() {
      return lane.sink !== null;
    },
    bound: options.maxBuffered,
    flush: () => lane.flush(),
    stats: () => ({ ...lane.counts, buffered: lane.buffer.length }),
    close: () => lane.close(),
  };
}
