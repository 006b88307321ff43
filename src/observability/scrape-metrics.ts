import { Counter, Gauge, type MetricObjectWithValues, type MetricValue, type Registry } from 'prom-client';
import { withTimeout } from '../shared/timeout.js';
import type { OtelExportCounts } from './otel-export.js';
import type { MonitorSeries } from './types.js';

/**
 * The metrics read from other components at scrape time (the run queue, the task-log writer, the
 * monitors, the OTLP export): each registered once, reading through `ScrapeReaders`, set when the
 * component is built.
 */

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

/** The capture processor's span lane's counters (spans ingested over OTLP), read at scrape time. */
export interface SpanLaneCounts {
  buffered: number;
  failed: number;
  written: number;
}

/** The OTLP export bodies in flight (bytes held now) and the requests answered 429 past their bound. */
export interface OtlpInflightCounts {
  bytes: number;
  busy: number;
}

/** The reads the scrape-time metrics make; null until the component is set (its series then stay out). */
export interface ScrapeReaders {
  queues: (() => Promise<QueueDepths>) | null;
  log: (() => LogWriterCounts) | null;
  spans: (() => SpanLaneCounts) | null;
  otlpInflight: (() => OtlpInflightCounts) | null;
  monitors: (() => Promise<MonitorSeries[]>) | null;
  otel: (() => OtelExportCounts) | null;
}

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

/**
 * One field of a component's counts, read at scrape time: throws (its series then left out) while the
 * component is not set, and reads a field the component does not keep as 0.
 */
function fieldOf<T extends object>(reader: () => (() => T) | null, component: string) {
  return (field: keyof T) => () => {
    const read = reader();
    if (!read) throw new Error(`no ${component}`);
    return (read()[field] as number | undefined) ?? 0;
  };
}

/** Jobs in the run queue per environment and state. */
export function registerQueueDepth(registry: Registry, readers: ScrapeReaders): void {
  new Gauge({
    name: 'evalgate_queue_depth',
    help: 'Jobs in the run queue per environment and state (waiting, active, delayed)',
    labelNames: ['environment', 'state'] as const,
    registers: [registry],
    async collect() {
      let depths: QueueDepths = {};
      try {
        if (readers.queues)
          depths = await withTimeout(readers.queues(), COLLECT_TIMEOUT_MS, 'collector timed out', {
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
}

/** The task-log writer's backlog, drops, spill and writes. */
export function registerLogWriter(registry: Registry, readers: ScrapeReaders): void {
  const logValue = fieldOf(() => readers.log, 'log writer');
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
}

/** The span lane's backlog, drops and writes. */
export function registerSpanLane(registry: Registry, readers: ScrapeReaders): void {
  const spanValue = fieldOf(() => readers.spans, 'span lane');
  new ReadGauge(
    'evalgate_span_lane_backlog',
    'Spans ingested over OTLP, taken and not yet stored',
    registry,
    spanValue('buffered'),
  );
  new ReadCounter(
    'evalgate_span_lane_dropped_total',
    'Spans taken and then dropped since the process started (refused by the database, or held at shutdown)',
    registry,
    spanValue('failed'),
  );
  new ReadCounter(
    'evalgate_span_lane_written_total',
    'Spans ingested over OTLP and stored since the process started',
    registry,
    spanValue('written'),
  );
}

/** The OTLP export bytes in flight, and the exports answered 429 past their bound. */
export function registerOtlpInflight(registry: Registry, readers: ScrapeReaders): void {
  const value = fieldOf(() => readers.otlpInflight, 'OTLP ingest');
  new ReadGauge(
    'evalgate_otlp_inflight_bytes',
    'OTLP export body bytes held now: received, decoding or being stored',
    registry,
    value('bytes'),
  );
  new ReadCounter(
    'evalgate_otlp_busy_total',
    'OTLP export requests answered 429 since the process started (in-flight bytes, or the trace store backlog, at their bound)',
    registry,
    value('busy'),
  );
}

/** Every monitor's counts per evaluator and its lag. */
export function registerMonitors(registry: Registry, readers: ScrapeReaders): void {
  // One read serves the monitor metrics of one scrape.
  let monitorRead: { at: number; rows: Promise<MonitorSeries[]> } | null = null;
  const monitorRows = async (): Promise<MonitorSeries[]> => {
    const read = readers.monitors;
    if (!read) return [];
    if (!monitorRead || Date.now() - monitorRead.at > 500) {
      monitorRead = {
        at: Date.now(),
        rows: withTimeout(read(), COLLECT_TIMEOUT_MS, 'collector timed out', { unref: true }),
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
}

/** The OTLP export's items by signal and outcome, and what it has pending. */
export function registerOtelExport(registry: Registry, readers: ScrapeReaders): void {
  new Counter({
    name: 'evalgate_otel_export_items_total',
    help: 'Spans and score events of the OTLP export, by signal and outcome (exported, failed, dropped)',
    labelNames: ['signal', 'outcome'] as const,
    registers: [registry],
    collect() {
      this.reset();
      const c = readers.otel?.();
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
      const c = readers.otel?.();
      for (const signal of c ? (['spans', 'events'] as const) : [])
        this.set({ signal }, c?.[signal].pending ?? 0);
    },
  });
}
