import type { Kysely } from 'kysely';
import type { Database } from '../db/schema.js';
import { type CaptureExporter, ExportQueue, type ExportQueueStats } from './export-queue.js';
import { type JournalOptions, TaskLogJournal } from './journal.js';
import type { SpanLane } from './span-lane.js';
import { type CaptureSpanOptions, createSpanCapture, type SpanCapture } from './span-replay.js';
import { readSpoolFile, type Segment } from './spool.js';
import type { LogWriter, LogWriterStats, TaskLogRecord } from './types.js';

/** A record past the store's bound is handed to it again at most this many times, then counted as lost. */
const REFILL_TRIES = 5;

export interface CaptureProcessorOptions<S = unknown> {
  /**
   * The task-log store: the sink the journal waits for (a file is deleted once every record in it is
   * settled there). It batches its records into transactions (seqs, the call join, sessions and the
   * calls' own spans are decided inside each), in this process (`createLogWriter`) or on its thread
   * (`createThreadedLogWriter`: the thread is its transport).
   */
  store: LogWriter;
  /** The store's bound: records past it stay in the journal, handed over again once it is half empty. */
  maxBuffered: number;
  /** The write-ahead journal in the data dir (left out: records live only in memory until stored). */
  journal?: JournalOptions | null;
  /** Further sinks, each handed every recorded call it takes, in batches (the OTLP export). */
  exporters?: CaptureExporter[];
  /**
   * The span lane: the spans ingested over OTLP, batched to their sink (the trace service's: priced and
   * stored through the `TraceStore`), spooled in the data dir before an export is answered, replayed by
   * `replay` and flushed by `close` (left out: no span lane).
   */
  spans?: CaptureSpanOptions<S>;
  warn?: (message: string) => void;
}

export interface CaptureProcessor<S = unknown> extends LogWriter {
  /**
   * Stores the task logs that processes gone before (killed, or stopped while the database was away) had
   * journaled and not stored, then takes again the spans they had spooled (the span lane's sink attached:
   * a model-call span stored now becomes a task log) and from then on looks at the span spool every few
   * seconds; returns how many task logs it handed to the store. Call before serving.
   */
  replay(db: Kysely<Database>): Promise<number>;
  /** The span lane (null: none configured). */
  readonly spans: SpanLane<S> | null;
  /** Where the journal's files are (null: no journal). */
  readonly dir: string | null;
  /** Flushes the span lane, the store and every exporter. */
  forceFlush(): Promise<void>;
  /** Each exporter's counts, by name. */
  exporterStats(): Record<string, ExportQueueStats>;
}

/** The ids past the bound, by the journal file that holds them. */
function bySegment(overflow: Map<string, Segment>): Map<Segment, Set<string>> {
  const grouped = new Map<Segment, Set<string>>();
  for (const [id, segment] of overflow) {
    const ids = grouped.get(segment) ?? new Set<string>();
    ids.add(id);
    grouped.set(segment, ids);
  }
  return grouped;
}

/** The processor's state and steps; `createCaptureProcessor` hands out its methods bound. */
class Processor<S> {
  readonly journal: TaskLogJournal | null;
  readonly spans: SpanCapture<S> | null;
  readonly exporters: ExportQueue[];
  /** Records handed over that the store accepted (its own `accepted`), and those it dropped at its bound. */
  private storeAccepted = 0;
  private drops = 0;
  accepted = 0;
  private givenUp = 0;
  /** Records the store refused at its bound, kept in the journal file named here until it has room. */
  readonly overflow = new Map<string, Segment>();
  private readonly tries = new Map<string, number>();
  private closed = false;
  private closing = false;

  constructor(
    readonly store: LogWriter,
    private readonly options: CaptureProcessorOptions<S>,
  ) {
    this.spans = options.spans ? createSpanCapture(options.spans, options.warn) : null;
    this.journal = options.journal ? new TaskLogJournal(options.journal, () => this.tick()) : null;
    this.exporters = (options.exporters ?? []).map(
      (exporter) => new ExportQueue(exporter, { maxQueued: options.maxBuffered, warn: options.warn }),
    );
  }

  private tick(): void {
    this.refill();
    this.journal?.tidy(this.settled());
  }

  /** Records accepted by the store and since written or counted as failed (it settles them in order). */
  private settled(): number {
    const s = this.store.stats();
    return s.written + s.failed - this.drops;
  }

  /** A call recorded: completed by the exporters that take it, journaled and stored, then exported. */
  write(record: TaskLogRecord): void {
    this.accepted++;
    if (this.exporters.length === 0) {
      this.keep(record);
      return;
    }
    const takers: ExportQueue[] = [];
    for (const q of this.exporters) {
      if (!q.takes(record)) continue;
      q.prepare(record);
      takers.push(q);
    }
    this.keep(record);
    for (const q of takers) q.push(record);
  }

  /** Journaled (its start's line no longer holds its file), then handed to the store. */
  private keep(record: TaskLogRecord): void {
    const { journal } = this;
    // Without a journal the store's own counts are the processor's: nothing to keep track of here.
    if (!journal) {
      this.store.write(record);
      return;
    }
    journal.finish(record.id);
    const at = journal.append({ k: 'f', r: record });
    this.hand(record, at?.segment ?? null, at?.json ?? null);
  }

  /** `json`: the record's JSON text, already made by the journal (handed over as it is). */
  private hand(record: TaskLogRecord, segment: Segment | null, json: string | null): void {
    const { store } = this;
    if (json !== null && store.writeJson) store.writeJson(record, json);
    else store.write(record);
    const now = store.stats().accepted;
    if (now > this.storeAccepted) {
      this.storeAccepted = now;
      if (segment) segment.lastAccepted = this.storeAccepted;
      return;
    }
    this.drops++;
    if (!segment || this.closed) {
      this.givenUp++;
      return;
    }
    segment.overflow.add(record.id);
    this.overflow.set(record.id, segment);
  }

  private roomy(): boolean {
    return this.store.stats().buffered < this.options.maxBuffered / 2;
  }

  /** Records past the bound, handed over again while the store has room. */
  refill(): void {
    if (this.overflow.size === 0 || !this.roomy()) return;
    for (const [segment, ids] of bySegment(this.overflow)) {
      if (!this.refillFrom(segment, ids)) return;
    }
  }

  /** Hands over the records of `ids` kept in `segment`; false once the store has no more room. */
  private refillFrom(segment: Segment, ids: Set<string>): boolean {
    const { overflow, tries } = this;
    for (const line of readSpoolFile(segment.file)) {
      if (line.k !== 'f' || !ids.has(line.r.id) || overflow.get(line.r.id) !== segment) continue;
      const id = line.r.id;
      segment.overflow.delete(id);
      overflow.delete(id);
      const n = (tries.get(id) ?? 0) + 1;
      if (n > REFILL_TRIES) {
        tries.delete(id);
        this.givenUp++;
        continue;
      }
      tries.set(id, n);
      this.keep(line.r);
      if (!overflow.has(id)) tries.delete(id);
      if (!this.roomy()) return false;
    }
    // Ids not found in their file (it could not be read): lost.
    for (const id of ids) {
      if (overflow.get(id) !== segment) continue;
      segment.overflow.delete(id);
      overflow.delete(id);
      this.givenUp++;
    }
    return true;
  }

  stats(): LogWriterStats {
    const s = this.store.stats();
    // Without a journal nothing is kept past the store's bound: its counts are the processor's.
    if (!this.journal) return s;
    const { overflow } = this;
    return {
      accepted: this.accepted,
      written: s.written,
      failed: s.failed - this.drops + this.givenUp,
      buffered: s.buffered + overflow.size,
      spilled: overflow.size,
    };
  }

  async replay(db: Kysely<Database>): Promise<number> {
    // Stored only: a call replayed here was handed to the exporters by the process that recorded it.
    const logs = this.journal
      ? await this.journal.replay(db, (record) => {
          this.accepted++;
          this.keep(record);
        })
      : 0;
    await this.spans?.replay();
    return logs;
  }

  async forceFlush(): Promise<void> {
    // Spans first: a model-call span stored becomes a task log.
    await this.spans?.lane.flush();
    await this.store.flush();
    await Promise.all(this.exporters.map((q) => q.flush()));
  }

  async close(): Promise<void> {
    if (this.closing) return;
    this.closing = true;
    // The span lane first, while the task logs its model-call spans become are still taken.
    await this.spans?.close();
    this.journal?.stop();
    this.refill();
    const { store } = this;
    const before = store.stats().failed;
    await store.close();
    // What the store gave up at close (the database still away) is not stored: its files are kept.
    const lostAtClose = store.stats().failed > before;
    this.closed = true;
    this.journal?.close(this.settled(), lostAtClose);
    await Promise.all(this.exporters.map((q) => q.shutdown()));
  }
}

/**
 * The capture processor, in the shape of OpenTelemetry's batch processor and its exporters: every
 * recorded call is journaled (`journal.ts`: appended before it is accepted, so that a task log whose id
 * went to a client exists even after a kill; deleted once the store settled it; replayed at the next
 * start), handed to the task-log store, and fanned out to the exporters (the OTLP export), each batched,
 * held and retried by its own queue. Records the store drops at its bound (a long database outage) stay
 * in the journal and are handed over again once it has room, instead of being lost; only records the
 * database refuses, or that cannot be handed over after several tries, count as failed. Callers never
 * wait and never see an error.
 *
 * Its second lane (`spans`, `span-lane.ts`) takes the spans ingested over OTLP: spooled before the export
 * is answered (`span-replay.ts` over `span-spool.ts`), batched to the span sink, held through an outage,
 * bounded (a caller told "no room" answers "retry later"); replayed at `replay`, flushed at `close`. The
 * trace service attaches the sink (`spans.attach`): it records model-call spans through this processor.
 */
export function createCaptureProcessor<S>(
  options: CaptureProcessorOptions<S> & { spans: CaptureSpanOptions<S> },
): CaptureProcessor<S> & { readonly spans: SpanLane<S> };
export function createCaptureProcessor<S = unknown>(options: CaptureProcessorOptions<S>): CaptureProcessor<S>;
export function createCaptureProcessor<S>(options: CaptureProcessorOptions<S>): CaptureProcessor<S> {
  const p = new Processor(options.store, options);
  const { store, journal } = p;
  const processor: CaptureProcessor<S> = {
    dir: journal?.dir ?? null,
    spans: p.spans?.lane ?? null,
    write(record) {
      try {
        p.write(record);
      } catch {
        // Never thrown at the caller: the store and exporters count what they could not take.
      }
    },
    flush: () => store.flush(),
    // A record past the store's bound waits in the overflow, out of its order.
    holds: (id) => p.overflow.has(id) || (store.holds?.(id) ?? true),
    stats: () => p.stats(),
    replay: (db) => p.replay(db),
    forceFlush: () => p.forceFlush(),
    exporterStats: () => Object.fromEntries(p.exporters.map((q) => [q.exporter.name, q.stats()])),
    close: () => p.close(),
  };
  // A streamed call's start is kept only where there is a journal to keep it in.
  if (journal) processor.begin = (record) => journal.begin(record);
  return processor;
}
