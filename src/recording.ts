import { createCaptureProcessor } from './capture/processor.js';
import { createThreadedTraceStore } from './capture/threaded-trace-store.js';
import { createThreadedLogWriter } from './capture/threaded-writer.js';
import { createSqlTraceStore } from './capture/trace-store.js';
import type { CommittedLog, LogWriter } from './capture/types.js';
import { createLogWriter } from './capture/writer.js';
import type { Config } from './config.js';
import type { DatabaseHandle } from './db/database.js';
import { type ModelContext, resolveModel } from './llm/models/resolve.js';
import type { ProviderKind } from './llm/models/types.js';
import { providerOfSlug } from './observability/otel-export-genai.js';
import { otlpCallExporter } from './observability/otel-export-hooks.js';
import { createTraceService, type PendingSpan } from './traces/service.js';
import { spanCodec } from './traces/span-codec.js';

/*
 * The composition of recording, apart from the rest of the services (services.ts): the capture processor,
 * its task-log store, the OTLP export of calls, the span lane's store and the trace service.
 */

/** `gen_ai.provider.name` of the provider kinds that name one provider (the conventions' names). */
const PROVIDER_NAMES: Partial<Record<ProviderKind, string>> = {
  anthropic: 'anthropic',
  gemini: 'gcp.gemini',
};

/** `gen_ai.provider.name` of a gateway call's model: its registered upstream's kind, else null. */
async function providerName(models: ModelContext, projectId: string, ref: string): Promise<string | null> {
  const model = await resolveModel(models, projectId, ref);
  if (model.modelId === null) return providerOfSlug(model.slug);
  const named = PROVIDER_NAMES[model.provider];
  if (named) return named;
  return new URL(model.baseUrl).hostname === 'api.openai.com' ? 'openai' : 'openai_compatible';
}

/** Spans per batch of the span lane on SQLite (each batch a stretch of the event loop). */
const SQLITE_SPAN_BATCH = 100;

/**
 * What records: the capture processor with its sinks (the task-log store, on its thread or in this
 * process, the OTLP export when configured, and on its span lane the trace service's span sink).
 */
export async function createRecording(
  config: Config,
  database: DatabaseHandle,
  models: ModelContext,
  warn: (message: string) => void,
  onCommitted: (logs: CommittedLog[]) => void,
) {
  // An in-memory SQLite database exists only for its own connection: a thread cannot have another.
  const threaded = config.logWriter.thread && config.databaseUrl !== 'sqlite::memory:';
  const writerOptions = { ...config.logWriter, onCommitted };
  const store: LogWriter = threaded
    ? createThreadedLogWriter(config.databaseUrl, writerOptions, warn)
    : createLogWriter(database.db, { ...writerOptions, warn });
  // With an OTLP endpoint configured, every recorded call is also exported as a span (else untouched).
  // The OpenTelemetry SDK (a few hundred modules) is loaded only when an endpoint is configured.
  const otelExport = config.otel
    ? new (await import('./observability/otel-export.js')).OtelExport(config.otel, {
        warn,
        providerOf: (projectId, model) => providerName(models, projectId, model),
      })
    : null;
  // Task logs survive a kill: journaled to the data dir first. Spans over OTLP are the processor's span
  // lane: batched like task logs, and spooled as they are before the export is answered.
  const { batchSize, flushMs, maxBuffered } = config.logWriter;
  // On a SQLite file the span batches are inserted on a thread of their own (with the log writer's thread
  // setting): on the event loop that serves the gateway, a large export's inserts held every call behind
  // them. In this process (an in-memory database, or the thread setting off), batches of at most
  // SQLITE_SPAN_BATCH keep each stretch of the event loop to a few milliseconds.
  const sqlite = database.capabilities.name === 'sqlite';
  const spanStore =
    sqlite && threaded
      ? createThreadedTraceStore(config.databaseUrl, createSqlTraceStore(database.db))
      : null;
  const spanBatch = sqlite && !spanStore ? Math.min(batchSize, SQLITE_SPAN_BATCH) : batchSize;
  const logWriter = createCaptureProcessor<PendingSpan>({
    store,
    maxBuffered,
    journal: config.logWriter.spool && config.recording ? { dataDir: config.dataDir, warn } : null,
    exporters: otelExport ? [otlpCallExporter(otelExport)] : [],
    spans: {
      batchSize: spanBatch,
      flushMs,
      maxBuffered,
      codec: spanCodec,
      spool: config.logWriter.spool ? { dataDir: config.dataDir } : null,
    },
    warn,
  });
  // The span sink (pricing, rows, the trace store), attached to the lane by the trace service; the spans'
  // model calls are recorded through the processor (whose OTLP sink does not take them: those calls are
  // already spans of the application that sent them).
  const traces = createTraceService({
    db: database.db,
    spans: spanStore ?? createSqlTraceStore(database.db),
    logWriter: config.recording ? logWriter : null,
    prices: models.prices,
    resolveModel: (projectId, ref) => resolveModel(models, projectId, ref),
    lane: logWriter.spans,
    retentionDays: config.traceRetentionDays,
    logRetentionDays: config.logRetentionDays,
    warn,
  });
  // What a process gone before left is stored now: its task logs, then its spans (a model-call span
  // stored now becomes a task log).
  await logWriter.replay(database.db);
  return { logWriter, otelExport, traces, spanStore };
}
