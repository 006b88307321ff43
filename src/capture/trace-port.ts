import type { Insertable } from 'kysely';
import type { SpanTable } from '../db/schema.js';

/** A span as the trace store takes it: its columns, the attributes, events and resource as JSON text. */
export type NewSpanRow = Insertable<SpanTable>;

/** A span on its way to the store, with what it adds to its trace's summary (known before its JSON was written). */
export interface StoredSpan {
  row: NewSpanRow;
  /** The resource's `service.name`. */
  serviceName: string | null;
  /** A model call's tokens and cost. */
  call: { inputTokens: number; outputTokens: number; cost: number } | null;
}

/** What a retention pass deleted from the trace store. */
export interface TracesPruned {
  spans: number;
  traces: number;
  /** GenAI events received as OTLP log records, kept per span until its content joins a task log. */
  log_events: number;
}

/**
 * The trace store: the spans of each project's traces, and per trace the summary its list shows (name,
 * service, time bounds, span, error and model-call counts, tokens, cost), kept as spans arrive. Spans come
 * from OTLP ingest and from the gateway's own calls; readers list and show traces from what it keeps.
 */
export interface TraceStore {
  /**
   * Stores spans and adds them to their traces' summaries; a span stored before (the same project, trace
   * and span id: an exporter's retry) is skipped, and so is a second copy in one batch. Returns the spans
   * that were new.
   */
  store(spans: StoredSpan[]): Promise<StoredSpan[]>;
  /** Replaces a stored span's model-call summary (JSON text): its content arrived after it, in log events. */
  setModelCall(projectId: string, traceId: string, spanId: string, modelCall: string): Promise<void>;
  /**
   * Deletes spans and GenAI log events received before `cutoff` (ISO time), and traces last added to
   * before it, in bounded batches; returns how many of each went.
   */
  prune(cutoff: string): Promise<TracesPruned>;
}
