import { isDatabaseUnavailable } from '../db/database.js';

export interface SpanWriterStats {
  accepted: number;
  written: number;
  /** Dropped: past the bound, refused by the database for another reason than an outage, or held at close. */
  failed: number;
  buffered: number;
}

/**
 * Where the writer writes down what it takes before taking it (the span spool), so that what an export was
 * answered for survives a kill of the process.
 */
export interface SpanJournal<T> {
  /**
   * Writes `items[from, to)` down; `taken`: the writer's count of items taken once they are. False: they
   * could not be written, and the writer refuses them.
   */
  record(items: readonly T[], from: number, to: number, taken: number): boolean;
  /** The first `done` items taken are stored or given up (the writer takes and writes them in order). */
  settled(done: number): void;
}

export interface SpanWriterOptions<T> {
  /** Stores one batch; a database outage (see `isDatabaseUnavailable`) keeps the batch to retry. */
  store(batch: T[]): Promise<void>;
  batchSize: number;
  flushMs: number;
  /**
   * Items held at most (through an outage too); past it `write` refuses, except a write into an empty
   * buffer, which is always taken whole.
   */
  maxBuffered: number;
  retryMs?: number;
  /** Items are written down here before they are taken (none: they live in memory only until stored). */
  journal?: SpanJournal<T>;
  warn?: (message: string) => void;
}

/**
 * The trace store's writer, shaped like the task-log writer: accepts items without waiting, writes them in
 * batches (size or time, whichever first) one batch at a time, holds them through a database outage and
 * retries, refuses past a bound so that the caller can answer "retry later", and flushes on close.
 */
export interface SpanWriter<T> {
  /**
   * False when the buffer is too full for `items`, or the journal cannot write them down (nothing of them
   * was taken); an empty buffer takes any.
   */
  write(items: T[]): boolean;
  /**
   * Takes `items` in parts, each as room frees in the buffer (never past its bound), waiting for the
   * writes between parts: true once all are taken; false when no room frees for `waitMs`, the writer
   * closes, `signal` aborts or the journal cannot write a part down (what was taken stays taken: a span
   * sent again is stored once).
   */
  writeAll(items: readonly T[], waitMs: number, signal?: AbortSignal): Promise<boolean>;
  flush(): Promise<void>;
  stats(): SpanWriterStats;
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

export function createSpanWriter<T>(options: SpanWriterOptions<T>): SpanWriter<T> {
  const { batchSize, flushMs, maxBuffered, journal } = options;
  const retryMs = options.retryMs ?? 500;
  const buffer: T[] = [];
  const stats: SpanWriterStats = { accepted: 0, written: 0, failed: 0, buffered: 0 };
  let timer: NodeJS.Timeout | null = null;
  let running: Promise<void> | null = null;
  let closed = false;
  let down = false;
  let waiters: (() => void)[] = [];
  /** Callers of writeAll waiting for room in the buffer. */
  const roomWaiters: (() => void)[] = [];
  const roomFreed = () => {
    for (const f of roomWaiters.splice(0)) f();
  };

  const settle = () => {
    if (buffer.length > 0 && !down) return;
    const w = waiters;
    waiters = [];
    for (const f of w) f();
  };

  function schedule(delay: number) {
    if (timer || running) return;
    timer = setTimeout(() => {
      timer = null;
      void drain();
    }, delay);
    timer.unref?.();
  }

  async function drain(): Promise<void> {
    if (running) return running;
    running = (async () => {
      while (buffer.length > 0) {
        const batch = buffer.slice(0, batchSize);
        try {
          await options.store(batch);
          buffer.splice(0, batch.length);
          stats.written += batch.length;
          journal?.settled(stats.written + stats.failed);
          roomFreed();
          if (down) options.warn?.('The trace store is writing again after a database outage');
          down = false;
        } catch (err) {
          if (isDatabaseUnavailable(err) && !closed) {
            if (!down)
              options.warn?.(`Spans are held while the database is unavailable: ${(err as Error).message}`);
            down = true;
            break;
          }
          buffer.splice(0, batch.length);
          stats.failed += batch.length;
          journal?.settled(stats.written + stats.failed);
          roomFreed();
          options.warn?.(
            `The database refused ${batch.length} spans, which are dropped: ${(err as Error).message}`,
          );
        }
      }
      stats.buffered = buffer.length;
    })();
    try {
      await running;
    } finally {
      running = null;
      if (buffer.length > 0) schedule(down ? retryMs : 0);
      settle();
    }
  }

  /** Takes `items[from, to)`, written down first; false when they could not be (nothing taken). */
  function push(items: readonly T[], from: number, to: number): boolean {
    if (journal && !journal.record(items, from, to, stats.accepted + to - from)) return false;
    for (let i = from; i < to; i++) buffer.push(items[i] as T);
    stats.accepted += to - from;
    stats.buffered = buffer.length;
    if (buffer.length >= batchSize && !running) {
      if (timer) clearTimeout(timer);
      timer = null;
      void drain();
    } else schedule(flushMs);
    return true;
  }

  return {
    write(items) {
      // A request larger than the bound is taken when nothing else is held (the request's own size is
      // bounded by the body limit), so that it can always succeed: refusing it whatever the buffer holds
      // would answer 503 to an export that no retry could ever get through.
      if (closed || (buffer.length > 0 && buffer.length + items.length > maxBuffered)) return false;
      return push(items, 0, items.length);
    },
    async writeAll(items, waitMs, signal) {
      let taken = 0;
      // Since when no room has freed: the wait is for progress, not for the whole of a large write.
      let since: number | null = null;
      while (taken < items.length) {
        if (closed || signal?.aborted) return false;
        const free = Math.min(maxBuffered - buffer.length, items.length - taken);
        if (free > 0) {
          if (!push(items, taken, taken + free)) return false;
          taken += free;
          since = null;
          continue;
        }
        since ??= Date.now();
        const left = since + waitMs - Date.now();
        if (left <= 0) return false;
        await waitForRoom(roomWaiters, left, signal);
      }
      return true;
    },
    async flush() {
      if (buffer.length === 0 && !running) return;
      const done = new Promise<void>((resolve) => waiters.push(resolve));
      if (timer) clearTimeout(timer);
      timer = null;
      void drain();
      await done;
    },
    stats: () => ({ ...stats, buffered: buffer.length }),
    async close() {
      await this.flush();
      closed = true;
      roomFreed();
      if (timer) clearTimeout(timer);
      timer = null;
      if (buffer.length > 0) {
        stats.failed += buffer.length;
        buffer.length = 0;
      }
    },
  };
}
