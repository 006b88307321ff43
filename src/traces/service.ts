import type { Kysely } from 'kysely';
import { pruneTaskLogs } from '../capture/log-retention.js';
import type { SpanLane, SpanSink, SpanWriterStats } from '../capture/span-lane.js';
import type { StoredSpan, TraceStore } from '../capture/trace-port.js';
import type { LogWriter } from '../capture/types.js';
import { loadContainer } from '../catalog/containers/resolve.js';
import type { Database } from '../db/schema.js';
import type { PriceTable } from '../llm/models/prices.js';
import { costOfTokens, pricesOf, type TokenPrices, tablePricesOf } from '../llm/models/pricing.js';
import type { ResolvedModel } from '../llm/models/types.js';
import { createLogIngest, type LogIngest, type LogIngestResult } from './logs-ingest.js';
import type { JsonValue, ModelCallFacts } from './mapping/index.js';
import type { OtlpLogsRequest } from './otlp/logs-proto.js';
import type { OtlpTraceRequest } from './otlp/proto.js';
import type { PendingSpan } from './span.js';
import { type IngestResult, spansOf, TraceStoreBusyError, takeSpans } from './span-ingest.js';
import { modelOf, taskLogIdOf, taskLogOf } from './task-log.js';
import type { SpanModelCall } from './types.js';

export { CONTAINER_ATTRIBUTE, type IngestResult, TraceStoreBusyError } from './span-ingest.js';

/** What the trace service needs from the process. */
export interface TraceServiceDeps {
  db: Kysely<Database>;
  /** Where spans and their traces' summaries are kept. */
  spans: TraceStore;
  /** The task-log writer model-call spans are recorded through (null: recording off). */
  logWriter: LogWriter | null;
  prices: PriceTable;
  resolveModel(projectId: string, ref: string): Promise<ResolvedModel>;
  /**
   * The capture processor's span lane: ingested spans are handed to it, and the service attaches its sink
   * to it (pricing, rows, the `TraceStore`); the processor batches, spools, replays and closes it.
   */
  lane: SpanLane<PendingSpan>;
  /** Days spans are kept; 0: for ever. */
  retentionDays?: number;
  /** Days task logs are kept (EVALGATE_LOG_RETENTION_DAYS); 0: for ever. */
  logRetentionDays?: number;
  warn?: (message: string) => void;
}

export type { PendingSpan } from './span.js';

export interface IngestOptions {
  /** How long the request may wait for room to free in the span lane's buffer (default 5 s) before a 503. */
  waitMs?: number;
  /** The client left: what is not taken yet is not. */
  signal?: AbortSignal;
}

const DEFAULT_WAIT_MS = 5_000;

/** What a retention pass deleted. */
export interface PruneResult {
  spans: number;
  traces: number;
  /** GenAI events received as OTLP log records (kept per span until its content joins a task log). */
  log_events: number;
  task_logs: number;
}

export interface TraceService {
  /**
   * Takes the spans of an export request: each valid span is handed to the span lane (off the request
   * path), in parts of at most the lane's bound, each as room frees (a request of more spans than the
   * bound is taken whole), written to the span spool first when there is one; invalid ones are counted as
   * rejected. A request is taken only when the spans not yet stored (buffered, or of requests being taken)
   * and its own fit the lane's bound, or when there are none: else it throws `TraceStoreBusyError` before
   * taking any, so that a flood of large exports is refused at once instead of queued. Throws 404 for an
   * unknown header container, 503 when no room frees in the lane for `waitMs` (a store genuinely behind,
   * or the database down) or the spool cannot be written.
   */
  ingest(
    projectId: string,
    headerContainer: string | null,
    request: OtlpTraceRequest,
    options?: IngestOptions,
  ): Promise<IngestResult>;
  /**
   * Takes the GenAI events of an OTLP logs export request (message content sent as log records): stored
   * per span and joined to the span's task log whichever arrives first.
   */
  ingestLogs(projectId: string, request: OtlpLogsRequest): Promise<LogIngestResult>;
  /** Stores what the span lane holds, then the GenAI events waiting for their spans. */
  flush(): Promise<void>;
  /** Deletes what is past the retentions (in bounded batches); nothing of what is kept for ever. */
  prune(now?: Date): Promise<PruneResult>;
  /** The span lane's counts. */
  stats(): SpanWriterStats;
  /** Stops the retention passes (the span lane is the capture processor's to close). */
  close(): Promise<void>;
}

const PRUNE_EVERY_MS = 3_600_000;

const CONTAINER_CACHE_MS = 60_000;

/** The prices of a span's model: the project's model of that name, else the bundled table's. */
async function spanPrices(
  deps: TraceServiceDeps,
  projectId: string,
  name: string,
  provider: string,
): Promise<TokenPrices> {
  try {
    return pricesOf(await deps.resolveModel(projectId, name));
  } catch {
    return tablePricesOf(deps.prices, provider, name);
  }
}

const PRICE_CACHE_MS = 60_000;
const PRICE_CACHE_SIZE = 10_000;

/** JSON text of a span's resource: one per resource of a request, not one per span. */
type ResourceTexts = Map<object, { text: string; service: string | null }>;

function resourceOf(texts: ResourceTexts, resource: Record<string, JsonValue>) {
  let hit = texts.get(resource);
  if (!hit) {
    const service = resource['service.name'];
    hit = { text: JSON.stringify(resource), service: typeof service === 'string' ? service : null };
    texts.set(resource, hit);
  }
  return hit;
}

function storedOf(p: PendingSpan, call: SpanModelCall | null, now: string, texts: ResourceTexts): StoredSpan {
  const s = p.span;
  const resource = resourceOf(texts, s.resource);
  return {
    row: {
      project_id: p.projectId,
      trace_id: s.traceId,
      span_id: s.spanId,
      parent_span_id: s.parentSpanId,
      container_id: p.containerId,
      name: s.name,
      kind: s.kind,
      operation: s.facts.operation,
      started_at: s.startedAt,
      ended_at: s.endedAt,
      duration_ms: s.durationMs,
      status_code: s.status.code,
      status_message: s.status.message,
      attributes: JSON.stringify(s.attributes),
      events: s.events.length === 0 ? '[]' : JSON.stringify(s.events),
      resource: resource.text,
      scope: s.scope ? JSON.stringify(s.scope) : null,
      session_id: s.facts.sessionId,
      model: call?.model ?? null,
      model_call: call ? JSON.stringify(call) : null,
      task_log_id: call?.task_log_id ?? null,
      received_at: now,
    },
    serviceName: resource.service,
    call: call
      ? { inputTokens: call.usage.input_tokens, outputTokens: call.usage.output_tokens, cost: call.cost }
      : null,
  };
}

/** A span's model call as the span API shows it. */
function callView(call: ModelCallFacts, logId: string | null, cost: number): SpanModelCall {
  return {
    task_log_id: logId,
    provider: call.provider,
    model: modelOf(call),
    request_model: call.requestModel,
    response_model: call.responseModel,
    // The span API's counts are integers: an unknown count shows as 0 there (the task log omits it).
    usage: {
      input_tokens: call.usage.input ?? 0,
      output_tokens: call.usage.output ?? 0,
      total_tokens: (call.usage.input ?? 0) + (call.usage.output ?? 0),
    },
    cost,
    content_captured: call.content.input !== null || call.content.output !== null,
  };
}

/** A project's container by reference (null: its default), looked up once per CONTAINER_CACHE_MS. */
function containerCache(
  db: TraceServiceDeps['db'],
): (projectId: string, ref: string | null) => Promise<string> {
  const containers = new Map<string, { id: Promise<string>; until: number }>();
  return (projectId: string, ref: string | null): Promise<string> => {
    const k = `${projectId}\u0000${ref ?? ''}`;
    const hit = containers.get(k);
    if (hit && hit.until > Date.now()) return hit.id;
    const id = loadContainer(db, projectId, ref);
    containers.set(k, { id, until: Date.now() + CONTAINER_CACHE_MS });
    id.catch(() => containers.delete(k));
    return id;
  };
}

/** The cost of a span's model call at its project's prices for the model, kept PRICE_CACHE_MS. */
function priceCache(deps: TraceServiceDeps): (projectId: string, call: ModelCallFacts) => Promise<number> {
  const priced = new Map<string, { prices: Promise<TokenPrices>; until: number }>();
  return async (projectId: string, call: ModelCallFacts): Promise<number> => {
    const name = modelOf(call);
    const provider = call.provider?.toLowerCase() ?? '';
    const k = `${projectId}\u0000${provider}\u0000${name}`;
    let hit = priced.get(k);
    if (!hit || hit.until < Date.now()) {
      if (priced.size >= PRICE_CACHE_SIZE) priced.clear();
      hit = { prices: spanPrices(deps, projectId, name, provider), until: Date.now() + PRICE_CACHE_MS };
      priced.set(k, hit);
    }
    // Unknown counts cost nothing: the price is of what was recorded.
    return costOfTokens(await hit.prices, call.usage.input, call.usage.output);
  };
}

/**
 * The span sink the capture processor's span lane hands its batches to: each span's model call priced at
 * its project's prices, the rows stored through the `TraceStore` (a span stored already is skipped), the
 * GenAI events that came first joined to them, and each model-call span stored now recorded as a task log.
 */
function spanSink(deps: TraceServiceDeps, logs: Pick<LogIngest, 'enrich'>): SpanSink<PendingSpan> {
  // Prices per project and model, kept a minute: a batch of calls to one model looks it up once.
  const priceOf = priceCache(deps);
  return async (batch) => {
    const now = new Date().toISOString();
    const rows: StoredSpan[] = [];
    const texts: ResourceTexts = new Map();
    const calls = new Map<
      StoredSpan,
      { p: PendingSpan; call: ModelCallFacts; cost: number; logId: string }
    >();
    for (const p of batch) {
      const call = p.span.facts.call;
      if (!call) {
        rows.push(storedOf(p, null, now, texts));
        continue;
      }
      const cost = await priceOf(p.projectId, call);
      const logId =
        p.containerId && deps.logWriter ? taskLogIdOf(p.projectId, p.span.traceId, p.span.spanId) : null;
      const row = storedOf(p, callView(call, logId, cost), now, texts);
      rows.push(row);
      if (logId) calls.set(row, { p, call, cost, logId });
    }
    const fresh = await deps.spans.store(rows);
    // Message content that came first as log records joins the calls stored now.
    await logs.enrich(
      fresh.flatMap((row) => {
        const c = calls.get(row);
        return c ? [{ projectId: c.p.projectId, span: c.p.span, call: c.call, row: row.row }] : [];
      }),
    );
    // Only spans stored now become task logs: a span sent again has its log already.
    for (const row of fresh) {
      const c = calls.get(row);
      if (!(c?.p.containerId && deps.logWriter)) continue;
      deps.logWriter.write(
        taskLogOf(
          { projectId: c.p.projectId, containerId: c.p.containerId, logId: c.logId },
          c.p.span,
          c.call,
          c.cost,
        ),
      );
    }
  };
}

export function createTraceService(deps: TraceServiceDeps): TraceService {
  const logs = createLogIngest({
    db: deps.db,
    spans: deps.spans,
    logWriter: deps.logWriter,
    warn: deps.warn,
  });
  const container = containerCache(deps.db);

  // The span sink: the lane hands it its batches.
  const lane = deps.lane;
  lane.attach(spanSink(deps, logs));
  // Spans of the requests being taken that are not handed to the lane yet (each request's admission counts them).
  let owed = 0;
  const days = deps.retentionDays ?? 0;
  const logDays = deps.logRetentionDays ?? 0;
  const before = (now: Date, n: number) => new Date(now.getTime() - n * 86_400_000).toISOString();
  const prune = async (now = new Date()): Promise<PruneResult> => {
    const traces =
      days > 0 ? await deps.spans.prune(before(now, days)) : { spans: 0, traces: 0, log_events: 0 };
    const logs = logDays > 0 ? await pruneTaskLogs(deps.db, before(now, logDays)) : 0;
    return { ...traces, task_logs: logs };
  };
  const pruning =
    days > 0 || logDays > 0
      ? setInterval(() => {
          prune().catch((err: Error) =>
            deps.warn?.(`Retention could not delete expired spans or task logs: ${err.message}`),
          );
        }, PRUNE_EVERY_MS)
      : null;
  pruning?.unref();

  return {
    async ingest(projectId, headerContainer, request, options = {}) {
      const total = spansOf(request);
      const backlog = lane.stats().buffered + owed;
      // An export without spans adds nothing: it is never refused.
      if (total > 0 && backlog > 0 && backlog + total > lane.bound)
        throw new TraceStoreBusyError(backlog, total);
      owed += total;
      let left = total;
      try {
        return await takeSpans(
          { lane, container, waitMs: options.waitMs ?? DEFAULT_WAIT_MS, signal: options.signal },
          projectId,
          headerContainer,
          request,
          (n) => {
            left -= n;
            owed -= n;
          },
        );
      } finally {
        owed -= left;
      }
    },
    ingestLogs: (projectId, request) => logs.ingest(projectId, request),
    flush: () => lane.flush().then(() => logs.flush()),
    prune,
    stats: () => lane.stats(),
    close: async () => {
      if (pruning) clearInterval(pruning);
    },
  };
}
