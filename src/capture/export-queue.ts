import { createBackoff } from './batch-attempts.js';
import type { TaskLogRecord } from './types.js';

/**
 * The exporter side of the capture processor, in the shape of OpenTelemetry's SpanExporter: a sink that
 * takes recorded calls in batches and says whether it took them. The processor batches for it, holds
 * and retries a batch it failed, bounds what waits for it, and flushes and shuts it down.
 */

/** An export's outcome, as OpenTelemetry's `ExportResult`. */
export interface ExportResult {
  code: 'success' | 'failed';
  error?: Error;
}

export interface CaptureExporter {
  /** Named in warnings. */
  readonly name: string;
  /** Whether it takes this record (all when left out). */
  takes?(record: TaskLogRecord): boolean;
  /**
   * Completes a record it takes before the record is journaled and stored (so the store keeps what the
   * exporter sends): e.g. trace ids for a call that came without any. Must not throw.
   */
  prepare?(record: TaskLogRecord): void;
  /** Exports one batch; `failed` (or a rejection) has the batch held and tried again after a wait. */
  export(batch: readonly TaskLogRecord[]): Promise<ExportResult>;
  /** Sends on whatever it holds itself. */
  forceFlush(): Promise<void>;
  /** Sends on what it holds, then stops. */
  shutdown(): Promise<void>;
}

export interface ExportQueueOptions {
  /** Records waiting for the exporter (failed batches included) before new ones are dropped. */
  maxQueued: number;
  /** Records in one `export` call. */
  maxBatch?: number;
  /** A batch still failing at shutdown is tried this many more times, then dropped. */
  closeTries?: number;
  warn?: (message: string) => void;
}

export interface ExportQueueStats {
  exported: number;
  dropped: number;
  queued: number;
}

/**
 * One exporter's queue. A record is handed over at once when no export is in flight (no added latency);
 * records that come while one is in flight go together as the next batch. A failed batch goes back in
 * front, in order, and is tried again after a jittered, doubling wait; the exporter being away is told
 * once as it starts and once as it ends. Never waits, never throws.
 */
export class ExportQueue {
  private readonly queue: TaskLogRecord[] = [];
  private running: Promise<void> | null = null;
  private readonly backoff = createBackoff();
  private readonly maxBatch: number;
  private exported = 0;
  private dropped = 0;
  private down = false;
  private failures = 0;
  private closing = false;
  private closeFailures = 0;

  constructor(
    readonly exporter: CaptureExporter,
    private readonly options: ExportQueueOptions,
  ) {
    this.maxBatch = Math.max(1, options.maxBatch ?? 512);
  }

  takes(record: TaskLogRecord): boolean {
    try {
      return this.exporter.takes?.(record) ?? true;
    } catch {
      return false;
    }
  }

  prepare(record: TaskLogRecord): void {
    try {
      this.exporter.prepare?.(record);
    } catch {
      // Exported as it is.
    }
  }

  push(record: TaskLogRecord): void {
    if (this.closing || this.queue.length >= this.options.maxQueued) {
      this.dropped++;
      return;
    }
    this.queue.push(record);
    this.pump();
  }

  private pump(): void {
    if (this.running || this.queue.length === 0) return;
    this.running = this.run().finally(() => {
      this.running = null;
      this.pump();
    });
  }

  private async run(): Promise<void> {
    const batch = this.queue.splice(0, this.maxBatch);
    let result: ExportResult;
    try {
      result = await this.exporter.export(batch);
    } catch (err) {
      result = { code: 'failed', error: err instanceof Error ? err : new Error(String(err)) };
    }
    if (result.code === 'success') {
      this.exported += batch.length;
      this.backoff.reset();
      if (this.down) {
        this.down = false;
        this.options.warn?.(`The ${this.exporter.name} export takes records again`);
      }
      return;
    }
    this.failures++;
    if (this.closing && ++this.closeFailures > (this.options.closeTries ?? 2)) {
      this.dropped += batch.length + this.queue.length;
      this.queue.length = 0;
      return;
    }
    // Held again in front, in order; the newest past the bound are dropped.
    this.queue.unshift(...batch);
    const over = this.queue.length - this.options.maxQueued;
    if (over > 0) {
      this.queue.length = this.options.maxQueued;
      this.dropped += over;
    }
    if (!this.down) {
      this.down = true;
      this.options.warn?.(
        `The ${this.exporter.name} export failed (${result.error?.message ?? 'no reason given'}): its records are held and tried again`,
      );
    }
    if (!this.closing) await this.backoff.pause();
  }

  /** Resolves once everything queued so far is exported (or dropped), or once an export failed; then the exporter's own flush. */
  async flush(): Promise<void> {
    const failuresBefore = this.failures;
    while ((this.running || this.queue.length > 0) && this.failures === failuresBefore) {
      this.backoff.wake();
      this.pump();
      await this.running;
    }
    await this.exporter.forceFlush().catch(() => {});
  }

  /** Exports what is queued (a failing batch tried a few more times, at once), then shuts the exporter down. */
  async shutdown(): Promise<void> {
    if (this.closing) return;
    this.closing = true;
    this.backoff.wake();
    while (this.running || this.queue.length > 0) {
      this.pump();
      await this.running;
    }
    await this.exporter.shutdown().catch(() => {});
  }

  stats(): ExportQueueStats {
    return { exported: this.exported, dropped: this.dropped, queued: this.queue.length };
  }
}
