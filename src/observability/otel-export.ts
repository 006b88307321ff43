import {
  type Attributes,
  type Context,
  ROOT_CONTEXT,
  SpanKind,
  SpanStatusCode,
  TraceFlags,
  trace,
} from '@opentelemetry/api';
import { type ExportResult, ExportResultCode } from '@opentelemetry/core';
import { OTLPLogExporter } from '@opentelemetry/exporter-logs-otlp-proto';
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-proto';
import { resourceFromAttributes } from '@opentelemetry/resources';
import {
  BatchLogRecordProcessor,
  LoggerProvider,
  type LogRecordExporter,
  type ReadableLogRecord,
} from '@opentelemetry/sdk-logs';
import {
  AlwaysOnSampler,
  BatchSpanProcessor,
  type IdGenerator,
  RandomIdGenerator,
  type ReadableSpan,
  type SpanExporter,
  TracerProvider,
} from '@opentelemetry/sdk-trace';
import type { TaskLogRecord } from '../capture/types.js';
import type { OtelExportSettings } from '../config-otel.js';
import {
  ATTR_GEN_AI_EVALUATION_EXPLANATION,
  ATTR_GEN_AI_EVALUATION_NAME,
  ATTR_GEN_AI_EVALUATION_SCORE_LABEL,
  ATTR_GEN_AI_EVALUATION_SCORE_VALUE,
  ATTR_GEN_AI_RESPONSE_ID,
  EVENT_GEN_AI_EVALUATION_RESULT,
} from '../shared/genai-attributes.js';
import { withTimeout } from '../shared/timeout.js';
import { type EvaluationEvent, type GenAiSpan, genAiSpanOf, guardEvaluations } from './otel-export-genai.js';

export type { EvaluationEvent } from './otel-export-genai.js';

/** Items of one signal: handed to the SDK, exported, failed (collector down or refusing), dropped (queue full). */
export interface OtelSignalCounts {
  exported: number;
  failed: number;
  dropped: number;
  /** Handed to the SDK and not yet exported or failed. */
  pending: number;
}

export interface OtelExportCounts {
  spans: OtelSignalCounts;
  events: OtelSignalCounts;
}

export interface OtelExportOptions {
  /** The provider name of a project's model (`gen_ai.provider.name`), null when unknown. */
  providerOf?(projectId: string, model: string): Promise<string | null>;
  warn?(message: string): void;
}

const TRACE_ID = /^[0-9a-f]{32}$/;
const SPAN_ID = /^[0-9a-f]{16}$/;
const ZERO_TRACE = '0'.repeat(32);
const ZERO_SPAN = '0'.repeat(16);
const validTrace = (id: string | null): id is string => id !== null && TRACE_ID.test(id) && id !== ZERO_TRACE;
const validSpan = (id: string | null): id is string => id !== null && SPAN_ID.test(id) && id !== ZERO_SPAN;

/** Gives the SDK the ids of the span being started (the call's own, as its task log records them). */
class GivenIds implements IdGenerator {
  private readonly random = new RandomIdGenerator();
  next: { traceId: string | null; spanId: string | null } = { traceId: null, spanId: null };
  generateTraceId(): string {
    return this.next.traceId ?? this.random.generateTraceId();
  }
  generateSpanId(): string {
    return this.next.spanId ?? this.random.generateSpanId();
  }
}

/** A context whose current span is another process's (or an earlier export's) span. */
const remoteParent = (traceId: string, spanId: string): Context =>
  trace.setSpanContext(ROOT_CONTEXT, { traceId, spanId, traceFlags: TraceFlags.SAMPLED, isRemote: true });

const counts = (): OtelSignalCounts => ({ exported: 0, failed: 0, dropped: 0, pending: 0 });

/** An exporter that counts what each export did, so that a dead collector shows in the metrics. */
function counted<T>(
  exporter: { export(items: T[], done: (r: ExportResult) => void): void; shutdown(): Promise<void> },
  c: OtelSignalCounts,
): { export(items: T[], done: (r: ExportResult) => void): void; shutdown(): Promise<void> } {
  return {
    export(items, done) {
      exporter.export(items, (result) => {
        c.pending = Math.max(0, c.pending - items.length);
        if (result.code === ExportResultCode.SUCCESS) c.exported += items.length;
        else c.failed += items.length;
        done(result);
      });
    },
    shutdown: () => exporter.shutdown(),
  };
}

/** How many records wait for their span to be built (a burst beyond it is dropped and counted). */
const MAX_WAITING = 10_000;
const PROVIDER_TTL_MS = 60_000;
/** How long closing the process waits on the collector: what it has not taken by then is lost. */
const CLOSE_WAIT_MS = 2_000;

const bounded = (work: Promise<unknown>): Promise<void> =>
  withTimeout(work, CLOSE_WAIT_MS, 'collector too slow', { unref: true }).then(
    () => undefined,
    () => undefined,
  );

/**
 * The gateway's telemetry out: one GenAI client span per recorded call and one `gen_ai.evaluation.result`
 * event per score, through the OpenTelemetry SDK's batch processors and OTLP/HTTP exporters. Nothing here
 * runs on the request path: `call()` queues the record, spans are built on the next turn; the SDK's
 * queues are bounded and what does not fit is dropped and counted.
 */
export class OtelExport {
  private readonly ids = new GivenIds();
  private readonly tracerProvider: TracerProvider;
  private readonly loggerProvider: LoggerProvider;
  private readonly tracer;
  private readonly logger;
  private readonly spans = counts();
  private readonly events = counts();
  private readonly waiting: TaskLogRecord[] = [];
  private scheduled = false;
  private closed = false;
  private readonly providers = new Map<string, { at: number; name: Promise<string | null> }>();

  constructor(
    readonly settings: OtelExportSettings,
    private readonly options: OtelExportOptions = {},
  ) {
    const resource = resourceFromAttributes({
      ...settings.resourceAttributes,
      'service.name': settings.serviceName,
    });
    const limits = {
      maxQueueSize: settings.maxQueueSize,
      maxExportBatchSize: settings.maxExportBatchSize,
      scheduledDelayMillis: settings.scheduledDelayMs,
      exportTimeoutMillis: settings.timeoutMs,
    };
    const spanExporter = new OTLPTraceExporter({
      url: settings.tracesUrl,
      headers: settings.tracesHeaders,
      timeoutMillis: settings.timeoutMs,
    });
    this.tracerProvider = new TracerProvider({
      resource,
      sampler: new AlwaysOnSampler(),
      idGenerator: this.ids,
      spanProcessors: [
        new BatchSpanProcessor({
          ...limits,
          exporter: counted<ReadableSpan>(spanExporter, this.spans) as SpanExporter,
        }),
      ],
    });
    const logExporter = new OTLPLogExporter({
      url: settings.logsUrl,
      headers: settings.logsHeaders,
      timeoutMillis: settings.timeoutMs,
    });
    this.loggerProvider = new LoggerProvider({
      resource,
      processors: [
        new BatchLogRecordProcessor({
          ...limits,
          exporter: counted<ReadableLogRecord>(logExporter, this.events) as LogRecordExporter,
        }),
      ],
    });
    this.tracer = this.tracerProvider.getTracer('evalgate');
    this.logger = this.loggerProvider.getLogger('evalgate');
  }

  counts(): OtelExportCounts {
    return { spans: { ...this.spans }, events: { ...this.events } };
  }

  /** A recorded call: queued, its span built and handed to the SDK on a later turn. Never throws. */
  call(record: TaskLogRecord): void {
    if (this.closed) return;
    if (this.waiting.length >= MAX_WAITING) {
      this.spans.dropped++;
      return;
    }
    this.waiting.push(record);
    if (!this.scheduled) {
      this.scheduled = true;
      setImmediate(() => void this.drain());
    }
  }

  private async drain(): Promise<void> {
    const batch = this.waiting.splice(0);
    this.scheduled = false;
    for (const record of batch) {
      try {
        const provider = await this.provider(record.projectId, record.model);
        this.emitSpan(genAiSpanOf(record, provider, this.settings.captureContent));
        if (record.span?.guards.length) this.evaluations(guardEvaluations(record));
      } catch (err) {
        this.spans.dropped++;
        this.options.warn?.(`otel export: a call's span could not be built: ${String(err)}`);
      }
    }
  }

  private provider(projectId: string, model: string): Promise<string | null> {
    const lookup = this.options.providerOf;
    if (!lookup) return Promise.resolve(null);
    const key = `${projectId}\u0000${model}`;
    const now = Date.now();
    const hit = this.providers.get(key);
    if (hit && now - hit.at < PROVIDER_TTL_MS) return hit.name;
    if (this.providers.size > 10_000) this.providers.clear();
    const name = lookup(projectId, model).catch(() => null);
    this.providers.set(key, { at: now, name });
    return name;
  }

  /** Whether the SDK's queue has room; else the item is dropped here and counted. */
  private admit(c: OtelSignalCounts): boolean {
    if (c.pending >= this.settings.maxQueueSize) {
      c.dropped++;
      return false;
    }
    c.pending++;
    return true;
  }

  private emitSpan(s: GenAiSpan): void {
    if (!this.admit(this.spans)) return;
    const traceId = validTrace(s.traceId) ? s.traceId : null;
    this.ids.next = { traceId, spanId: validSpan(s.spanId) ? s.spanId : null };
    // A child of the caller's span when the call came with a `traceparent`, else the root of its trace.
    const parent =
      traceId && validSpan(s.parentSpanId) ? remoteParent(traceId, s.parentSpanId) : ROOT_CONTEXT;
    try {
      const span = this.tracer.startSpan(
        s.name,
        { kind: SpanKind.CLIENT, startTime: s.startMs, attributes: s.attributes },
        parent,
      );
      if (s.error) span.setStatus({ code: SpanStatusCode.ERROR, message: s.error.message });
      span.end(s.endMs);
    } finally {
      this.ids.next = { traceId: null, spanId: null };
    }
  }

  /** Scores, each a `gen_ai.evaluation.result` log record in the evaluated call's span context. */
  evaluations(events: EvaluationEvent[]): void {
    if (this.closed) return;
    for (const e of events) {
      if (!validTrace(e.traceId) || !validSpan(e.spanId)) continue;
      if (!this.admit(this.events)) continue;
      const context = remoteParent(e.traceId, e.spanId);
      const attributes: Attributes = {
        ...e.attributes,
        [ATTR_GEN_AI_EVALUATION_NAME]: e.name,
      };
      if (e.evaluatorId !== null) attributes['evalgate.evaluator.id'] = e.evaluatorId;
      if (e.score !== null) attributes[ATTR_GEN_AI_EVALUATION_SCORE_VALUE] = e.score;
      if (e.label !== null) attributes[ATTR_GEN_AI_EVALUATION_SCORE_LABEL] = e.label;
      if (e.explanation !== null) attributes[ATTR_GEN_AI_EVALUATION_EXPLANATION] = e.explanation;
      if (e.responseId !== null) attributes[ATTR_GEN_AI_RESPONSE_ID] = e.responseId;
      this.logger.emit({
        eventName: EVENT_GEN_AI_EVALUATION_RESULT,
        timestamp: e.timeMs,
        context,
        attributes,
      });
    }
  }

  /** Exports what is queued now; a stalled collector is waited on for at most CLOSE_WAIT_MS. */
  async flush(): Promise<void> {
    await this.drain();
    await bounded(Promise.allSettled([this.tracerProvider.forceFlush(), this.loggerProvider.forceFlush()]));
  }

  /** Exports what is queued, waiting on a stalled collector for at most CLOSE_WAIT_MS, then stops. */
  async close(): Promise<void> {
    if (this.closed) return;
    await this.drain();
    this.closed = true;
    await bounded(Promise.allSettled([this.tracerProvider.shutdown(), this.loggerProvider.shutdown()]));
  }
}
