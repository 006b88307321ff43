import type { Kysely } from 'kysely';
import type { Database } from '../db/schema.js';
import { createBackoff, createBatchAttempts, createHold, type WriterHold } from './batch-attempts.js';
import { spanFactsOf } from './gateway-spans.js';
import { HeldIds } from './held-ids.js';
import { draftOf } from './log-row.js';
import { createOutageLog, type OutageLog } from './outage-log.js';
import type { CommittedLog, LogWriter } from './types.js';

export interface LogWriterOptions {
  /** Records per transaction; a full batch is written at once. */
  batchSize?: number;
  /** A partial batch waits at most this long. */
  flushMs?: number;
  /** Records held (buffered and in flight) before new ones are dropped and counted as failed. */
  maxBuffered?: number;
  /** Called after every batch (read `stats()` for the counts). */
  onProgress?: () => void;
  /** Told when the database stops (`down`, why) and starts (`up`) taking batches; without it, `warn` says so. */
  outage?: OutageLog;
  /** The writer's warnings: an outage and what it dropped, a batch the database refused. */
  warn?: (message: string) => void;
  /** Told of every batch once it is committed (the monitors select from it); must not throw or wait. */
  onCommitted?: (logs: CommittedLog[]) => void;
}

/** At close, with the database still away: what the writer was holding for it is lost now. */
function loseHeld(hold: WriterHold, left: number, options: LogWriterOptions): void {
  if (left === 0) return;
  hold.buffer.length = 0;
  hold.splits.length = 0;
  hold.lost += left;
  options.warn?.(`Closing while the database is unavailable: ${left} task logs held for it are lost`);
  options.onProgress?.();
}

/**
 * The task log writer: `write` only appends to a bounded in-memory buffer; one loop per process writes
 * full batches at once and partial ones after `flushMs`. Seqs come from the per-container counter row
 * inside each batch's transaction, so they are strictly increasing without gaps or duplicates even with
 * several processes on one PostgreSQL. While the database is away, failed batches stay held, in order,
 * and are tried again with back-off until it returns; only records past `maxBuffered` are dropped (and
 * counted in `failed`, and reported once per outage). Callers never wait and never see an error.
 */
export function createLogWriter(db: Kysely<Database>, options: LogWriterOptions = {}): LogWriter {
  const batchSize = Math.max(1, options.batchSize ?? 500);
  const flushMs = Math.max(1, options.flushMs ?? 200);
  const maxBuffered = Math.max(1, options.maxBuffered ?? 50_000);
  const warn = options.warn;

  // Records are serialised as they arrive: the buffer holds compact strings rather than the request
  // and response objects, which would otherwise outlive a young-generation collection and cost more.
  const hold = createHold();
  const { buffer, splits, asides } = hold;
  let inFlight = 0;
  /** The ids of what is held, for `holds` (records are settled in the order they were accepted). */
  const heldIds = new HeldIds();
  let accepted = 0;
  let dropped = 0;
  let closed = false;
  /** Set by close once its last flush is done: the loop stops retrying. */
  let stopping = false;
  /** A partial batch may be written now (its time is up, someone flushes, or held records are retried). */
  let due = false;
  let timer: NodeJS.Timeout | null = null;
  let pumping: Promise<void> | null = null;
  /** Attempts the database failed (unavailable): a flush does not wait out an outage. */
  let failures = 0;
  /** The current back-off (0 while the database takes batches), and how to cut it short. */
  const backoff = createBackoff();
  /** Flushes waiting for the end of an attempt. */
  const waiters = new Set<() => void>();
  const outage = options.outage ?? createOutageLog(maxBuffered, () => dropped, warn);
  const attempts = createBatchAttempts(db, hold, outage, options);

  function notify(): void {
    for (const done of waiters) done();
    waiters.clear();
  }

  function arm(): void {
    if (timer !== null || buffer.length === 0 || stopping) return;
    timer = setTimeout(() => {
      timer = null;
      if (buffer.length === 0) return;
      due = true;
      schedule();
    }, flushMs);
    timer.unref();
  }

  /** Records waiting to be written: buffered, in flight, or in the parts of a refused batch. */
  function held(): number {
    let n = buffer.length + inFlight;
    for (const part of splits) n += part.length;
    return n;
  }

  /** There is a batch to write now: a refused batch's part, a full batch, or a partial one that is due. */
  const ready = () => splits.length > 0 || buffer.length >= batchSize || (due && buffer.length > 0);

  function schedule(): void {
    if (pumping || stopping) return;
    if (ready()) pumping = pump();
    else arm();
  }

  async function pump(): Promise<void> {
    try {
      while (!stopping && ready()) {
        const batch = splits.shift() ?? buffer.splice(0, batchSize);
        inFlight = batch.length;
        const ok = await attempts.attempt(batch);
        inFlight = 0;
        if (ok) {
          backoff.reset();
          attempts.recovered();
        } else {
          failures++;
          // Held records are tried again whole, a partial batch included.
          due = true;
        }
        options.onProgress?.();
        notify();
        if (!ok && !stopping) await backoff.pause();
      }
      due = false;
    } finally {
      pumping = null;
      notify();
    }
    arm();
  }

  /** Resolves when what was accepted so far is written or counted, or once the database failed an attempt. */
  async function flush(): Promise<void> {
    const target = accepted;
    const failuresBefore = failures;
    while (hold.written + hold.lost < target && failures === failuresBefore) {
      due = true;
      if (pumping) backoff.wake();
      else schedule();
      if (!pumping) return;
      await new Promise<void>((resolve) => waiters.add(resolve));
    }
  }

  return {
    write(record) {
      try {
        if (closed || held() >= maxBuffered) {
          dropped++;
          return;
        }
        const draft = draftOf(record);
        const session = record.sessionId !== undefined ? null : { key: record.sessionKey };
        asides.set(draft, { session, span: spanFactsOf(record) });
        buffer.push(draft);
        accepted++;
        heldIds.accepted(draft.id);
        heldIds.trim(held());
        schedule();
      } catch {
        dropped++;
      }
    },
    flush,
    holds: (id) => heldIds.holds(id, held()),
    stats: () => ({ accepted, written: hold.written, failed: dropped + hold.lost, buffered: held() }),
    async close() {
      if (closed) return;
      closed = true;
      await flush();
      stopping = true;
      backoff.wake();
      if (pumping) await pumping;
      if (timer !== null) clearTimeout(timer);
      timer = null;
      // The database is still away: what it was holding for it is lost now.
      loseHeld(hold, held(), options);
    },
  };
}
