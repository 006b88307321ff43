import { Counter, collectDefaultMetrics, Gauge, Registry } from 'prom-client';
import type { OtelExportCounts } from './otel-export.js';
import {
  type LogWriterCounts,
  type OtlpInflightCounts,
  type QueueDepths,
  registerLogWriter,
  registerMonitors,
  registerOtelExport,
  registerOtlpInflight,
  registerQueueDepth,
  registerSpanLane,
  type ScrapeReaders,
  type SpanLaneCounts,
} from './scrape-metrics.js';
import { type HistogramSeries, SeriesHistogram } from './series-histogram.js';
import type { EngineMetrics, MonitorSeries, UpstreamOutcome } from './types.js';

export type { LogWriterCounts, QueueDepths, SpanLaneCounts } from './scrape-metrics.js';

/** The process's metrics: what the engine reports, HTTP requests, and values read at scrape time. */
export interface Metrics extends EngineMetrics {
  /** One HTTP request: `route` is the route template (`/v1/evaluators/:evaluator`) or `unmatched`. */
  httpRequest(route: string, method: string, status: number, seconds: number): void;
  /** Queue depths per environment, read at each scrape; a failing read leaves the series out. */
  setQueueDepth(read: () => Promise<QueueDepths>): void;
  /** The log writer's counts, read at each scrape; a failing read leaves the series out. */
  setLogWriter(read: () => LogWriterCounts): void;
  /** The span lane's counts (spans ingested over OTLP), read at each scrape; a failing read leaves the series out. */
  setSpanLane(read: () => SpanLaneCounts): void;
  /** The OTLP export bytes in flight and the 429s past their bound, read at each scrape. */
  setOtlpInflight(read: () => OtlpInflightCounts): void;
  /** Every monitor's counts and lag, read at each scrape; a failing read leaves the series out. */
  setMonitors(read: () => Promise<MonitorSeries[]>): void;
  /** The OTLP export's counts (exported, failed, dropped, pending), read at each scrape. */
  setOtelExport(read: () => OtelExportCounts): void;
  /** One verdict of a gateway guard: `verdict` is passed, blocked, flagged, redacted or error. */
  guardVerdict(guard: string, stage: string, verdict: string): void;
  /** The Prometheus text exposition of every metric. */
  render(): Promise<{ contentType: string; body: string }>;
}

export interface MetricsOptions {
  /** Process metrics (CPU, memory, event loop, GC) with the `evalgate_` prefix; on unless false. */
  defaultMetrics?: boolean;
}

/** Request latencies: fast API calls, up to gateway calls that wait on a model. */
const HTTP_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120];
/** Upstream model calls: 10 ms (cached, tiny) to 120 s (long generations). */
const UPSTREAM_BUCKETS = [0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 20, 30, 60, 120];
const METHODS = new Set(['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS']);
/** Model names come from callers: past this many distinct ones, the rest share the label `other`. */
const MAX_MODELS = 200;
const finite = (n: number) => Number.isFinite(n) && n >= 0;

export function createMetrics(options: MetricsOptions = {}): Metrics {
  // One registry per instance: tests build several apps in one process, and the global one would clash.
  const registry = new Registry();
  if (options.defaultMetrics !== false) collectDefaultMetrics({ register: registry, prefix: 'evalgate_' });

  const httpDuration = new SeriesHistogram({
    name: 'evalgate_http_request_duration_seconds',
    help: 'HTTP requests by route template, method and status, with their duration in seconds',
    labelNames: ['route', 'method', 'status'] as const,
    buckets: HTTP_BUCKETS,
    registers: [registry],
  });
  const upstreamDuration = new SeriesHistogram({
    name: 'evalgate_upstream_call_duration_seconds',
    help: 'Duration of upstream model calls made by evaluation runs, in seconds',
    labelNames: ['model', 'kind', 'outcome'] as const,
    buckets: UPSTREAM_BUCKETS,
    registers: [registry],
  });
  // Every call is one observation of the duration histogram: the counter is read from its series when
  // scraped, rather than counted again (with prom-client's label checks) on every call.
  new Counter({
    name: 'evalgate_upstream_calls_total',
    help: 'Upstream model calls made by evaluation runs, by model, kind (judge|generation) and outcome',
    labelNames: ['model', 'kind', 'outcome'] as const,
    registers: [registry],
    collect() {
      this.reset();
      for (const s of upstreamDuration.recorded()) this.inc(s.labels, s.count);
    },
  });
  const positions = new Counter({
    name: 'evalgate_positions_scored_total',
    help: 'Per-sample result rows stored by evaluation runs (scored, error or missing)',
    registers: [registry],
  });
  const chunks = new Gauge({
    name: 'evalgate_chunks_in_flight',
    help: 'Chunks of evaluation work executing in this process',
    registers: [registry],
  });

  const guardVerdicts = new Counter({
    name: 'evalgate_guard_verdicts_total',
    help: "Verdicts of the gateway's guards by guard (the check's name), stage and verdict",
    labelNames: ['guard', 'stage', 'verdict'] as const,
    registers: [registry],
  });
  const guardNames = new Set<string>();

  const readers: ScrapeReaders = {
    queues: null,
    log: null,
    spans: null,
    otlpInflight: null,
    monitors: null,
    otel: null,
  };
  registerQueueDepth(registry, readers);
  registerLogWriter(registry, readers);
  registerSpanLane(registry, readers);
  registerOtlpInflight(registry, readers);
  registerMonitors(registry, readers);
  registerOtelExport(registry, readers);

  // The series per (route, method, status), found by one string key: no label checks per request.
  const httpSeries = new Map<string, HistogramSeries>();
  const upstreamSeries = new Map<string, HistogramSeries>();
  const models = new Set<string>();
  const modelLabel = (model: string) => {
    if (models.has(model)) return model;
    if (models.size >= MAX_MODELS) return 'other';
    models.add(model);
    return model;
  };

  return {
    httpRequest(route, method, status, seconds) {
      const m = METHODS.has(method) ? method : 'other';
      const s = Number.isInteger(status) && status >= 100 && status <= 599 ? String(status) : 'other';
      const key = `${m} ${s} ${route}`;
      let series = httpSeries.get(key);
      if (!series) {
        series = httpDuration.series({ route, method: m, status: s });
        httpSeries.set(key, series);
      }
      httpDuration.record(series, finite(seconds) ? seconds : 0);
    },
    upstreamCall(model: string, kind: 'judge' | 'generation', outcome: UpstreamOutcome, seconds: number) {
      const label = modelLabel(model);
      const key = `${label}\u0000${kind}\u0000${outcome}`;
      let series = upstreamSeries.get(key);
      if (!series) {
        series = upstreamDuration.series({ model: label, kind, outcome });
        upstreamSeries.set(key, series);
      }
      upstreamDuration.record(series, finite(seconds) ? seconds : 0);
    },
    positionsScored(count) {
      if (finite(count) && count > 0) positions.inc(count);
    },
    chunksInFlight(delta) {
      if (Number.isFinite(delta)) chunks.inc(delta);
    },
    guardVerdict(guard, stage, verdict) {
      // Names come from policies: past MAX_MODELS distinct ones, the rest share the label `other`.
      if (!guardNames.has(guard) && guardNames.size < MAX_MODELS) guardNames.add(guard);
      guardVerdicts.inc({ guard: guardNames.has(guard) ? guard : 'other', stage, verdict });
    },
    setQueueDepth(read) {
      readers.queues = read;
    },
    setLogWriter(read) {
      readers.log = read;
    },
    setSpanLane(read) {
      readers.spans = read;
    },
    setOtlpInflight(read) {
      readers.otlpInflight = read;
    },
    setMonitors(read) {
      readers.monitors = read;
    },
    setOtelExport(read) {
      readers.otel = read;
    },
    async render() {
      return { contentType: registry.contentType, body: await registry.metrics() };
    },
  };
}
