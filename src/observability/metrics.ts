import {
  Counter,
  collectDefaultMetrics,
  Gauge,
  type MetricObjectWithValues,
  type MetricValue,
  Registry,
} from 'prom-client';
import { withTimeout } from '../shared/timeout.js';
import type { OtelExportCounts } from './otel-export.js';
import { type HistogramSeries, SeriesHistogram } from './series-histogram.js';
import type { EngineMetrics, MonitorSeries, UpstreamOutcome } from './types.js';

/** Per-environment queue counts, as a queue backend reports them. */
export type QueueDepths = Record<string, { waiting: number; active: number; delayed?: number }>;

/** The task log writer's counters, read at scrape time. */
export interface LogWriterCounts {
  buffered: number;
  failed: number;
  written: number;
  /** Records past the writer's bound kept in its spool file (none without a spool). */
  spilled?: number;
}

/** The process's metrics: what the engine reports, HTTP requests, and values read at scrape time. */
export interface Metrics extends EngineMetrics {
  /** One HTTP request: `route` is the route template (`/v1/evaluators/:evaluator`) or `unmatched`. */
  httpRequest(route: string, method: string, status: number, seconds: number): void;
  /** Queue depths per environment, read at each scrape; a failing read leaves the series out. */
  setQueueDepth(read: () => Promise<QueueDepths>): void;
  /** The log writer's counts, read at each scrape; a failing read leaves the series out. */
  setLogWriter(read: () => LogWriterCounts): void;
  /** Every monitor's counts and lag, read at each scrape; a failing read leaves the series out. */
  setMonitors(read: () => Promise<MonitorSeries[]>): void;
  /** The OTLP export's counts (exported, failed, dropped, pending), read at each scrape. */
  setOtelExport(read: () => OtelExportCounts): void;
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
/** A queue read that hangs (Redis unreachable) must not hang the scrape. */
const COLLECT_TIMEOUT_MS = 2_000;

type Sample = MetricObjectWithValues<MetricValue<string>>;

/** An unlabelled gauge read at scrape time; when the read fails, the series is left out rather than 0. */
class ReadGauge extends Gauge {
  constructor(name: string, help: string, registry: Registry, read: () => number) {
    super({ name, help, registers: [registry] });
    this.read = read;
  }
  private readonly read: () => number;
  override async get(): Promise<Sample> {
    return withReadValue(await super.get(), this.read);
  }
}

/** The counter counterpart of ReadGauge, for totals that another component keeps (`_total`). */
class ReadCounter extends Counter {
  constructor(name: string, help: string, registry: Registry, read: () => number) {
    super({ name, help, registers: [registry] });
    this.read = read;
  }
  private readonly read: () => number;
  override async get(): Promise<Sample> {
    return withReadValue(await super.get(), this.read);
  }
}

function withReadValue(metric: Sample, read: () => number): Sample {
  let value: number | undefined;
  try {
    value = read();
  } catch {
    value = undefined;
  }
  const values = value !== undefined && Number.isFinite(value) ? [{ value, labels: {} }] : [];
  return { ...metric, values };
}

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

  let readQueues: (() => Promise<QueueDepths>) | null = null;
  new Gauge({
    name: 'evalgate_queue_depth',
    help: 'Jobs in the run queue per environment and state (waiting, active, delayed)',
    labelNames: ['environment', 'state'] as const,
    registers: [registry],
    async collect() {
      let depths: QueueDepths = {};
      try {
        if (readQueues)
          depths = await withTimeout(readQueues(), COLLECT_TIMEOUT_MS, 'collector timed out', {
            unref: true,
          });
      } catch {
        depths = {};
      }
      // Set after the await, so that concurrent scrapes cannot interleave their values.
      this.reset();
      for (const [environment, d] of Object.entries(depths)) {
        for (const state of ['waiting', 'active', 'delayed'] as const) {
          const value = d[state];
          if (value !== undefined && Number.isFinite(value)) this.set({ environment, state }, value);
        }
      }
    },
  });

  let readLog: (() => LogWriterCounts) | null = null;
  const logValue = (field: keyof LogWriterCounts) => () => {
    if (!readLog) throw new Error('no log writer');
    return readLog()[field] ?? 0;
  };
  new ReadGauge(
    'evalgate_log_writer_backlog',
    'Task log records accepted and not yet written',
    registry,
    logValue('buffered'),
  );
  new ReadCounter(
    'evalgate_log_writer_dropped_total',
    'Task log records dropped since the process started (database down or buffer full)',
    registry,
    logValue('failed'),
  );
  new ReadGauge(
    'evalgate_log_writer_spilled',
    'Task log records past the in-memory bound, kept in the spool file until the writer has room',
    registry,
    logValue('spilled'),
  );
  new ReadCounter(
    'evalgate_log_writer_written_total',
    'Task log records written since the process started',
    registry,
    logValue('written'),
  );

  let readMonitors: (() => Promise<MonitorSeries[]>) | null = null;
  // One read serves the monitor metrics of one scrape.
  let monitorRead: { at: number; rows: Promise<MonitorSeries[]> } | null = null;
  const monitorRows = async (): Promise<MonitorSeries[]> => {
    if (!readMonitors) return [];
    if (!monitorRead || Date.now() - monitorRead.at > 500) {
      monitorRead = {
        at: Date.now(),
        rows: withTimeout(readMonitors(), COLLECT_TIMEOUT_MS, 'collector timed out', { unref: true }),
      };
    }
    try {
      return await monitorRead.rows;
    } catch {
      return [];
    }
  };
  const monitorCounts = [
    ['scored', 'Calls a monitor scored, per evaluator'],
    ['passed', 'Calls a monitor scored that passed, per evaluator'],
    ['failed', 'Calls a monitor scored that did not pass, per evaluator'],
    ['errors', 'Calls a monitor could not score, per evaluator'],
    ['scoreSum', 'Sum of the scores a monitor gave, per evaluator'],
  ] as const;
  for (const [field, help] of monitorCounts) {
    const name = field === 'scoreSum' ? 'evalgate_monitor_score_sum' : `evalgate_monitor_${field}_total`;
    new Counter({
      name,
      help,
      labelNames: ['monitor', 'name', 'evaluator'] as const,
      registers: [registry],
      async collect() {
        const rows = await monitorRows();
        this.reset();
        for (const r of rows) {
          if ('evaluator' in r)
            this.inc({ monitor: r.monitor, name: r.name, evaluator: r.evaluator }, r[field]);
        }
      },
    });
  }
  new Gauge({
    name: 'evalgate_monitor_lag_seconds',
    help: "Age of a monitor's oldest selected call not scored yet (0 when none)",
    labelNames: ['monitor', 'name'] as const,
    registers: [registry],
    async collect() {
      const rows = await monitorRows();
      this.reset();
      for (const r of rows)
        if ('lagSeconds' in r) this.set({ monitor: r.monitor, name: r.name }, r.lagSeconds);
    },
  });

  let readOtel: (() => OtelExportCounts) | null = null;
  new Counter({
    name: 'evalgate_otel_export_items_total',
    help: 'Spans and score events of the OTLP export, by signal and outcome (exported, failed, dropped)',
    labelNames: ['signal', 'outcome'] as const,
    registers: [registry],
    collect() {
      this.reset();
      const c = readOtel?.();
      for (const signal of c ? (['spans', 'events'] as const) : [])
        for (const outcome of ['exported', 'failed', 'dropped'] as const)
          this.inc({ signal, outcome }, c?.[signal][outcome]);
    },
  });
  new Gauge({
    name: 'evalgate_otel_export_pending',
    help: 'Spans and score events handed to the OTLP export and not yet exported or failed, by signal',
    labelNames: ['signal'] as const,
    registers: [registry],
    collect() {
      this.reset();
      const c = readOtel?.();
      for (const signal of c ? (['spans', 'events'] as const) : [])
        this.set({ signal }, c?.[signal].pending ?? 0);
    },
  });

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
    setQueueDepth(read) {
      readQueues = read;
    },
    setLogWriter(read) {
      readLog = read;
    },
    setMonitors(read) {
      readMonitors = read;
    },
    setOtelExport(read) {
      readOtel = read;
    },
    async render() {
      return { contentType: registry.contentType, body: await registry.metrics() };
    },
  };
}
