import { Histogram, type MetricObjectWithValues, type MetricValueWithName, type Registry } from 'prom-client';

type Value = MetricValueWithName<string>;

/** One label set's observations: a count per bucket (not cumulative), their sum and count. */
export interface HistogramSeries {
  readonly labels: Readonly<Record<string, string>>;
  readonly perBucket: Float64Array;
  sum: number;
  count: number;
}

export interface SeriesHistogramConfig<L extends string> {
  name: string;
  help: string;
  labelNames: readonly L[];
  buckets: readonly number[];
  registers: Registry[];
}

/**
 * A prom-client histogram for the request path. `observe` through prom-client checks the label names
 * and builds the series key on every call; here the caller keeps the series of a label set (made once,
 * by `series`) and `record` only finds the bucket and adds. The exposition is prom-client's own
 * (cumulative buckets with `le`, `+Inf`, `_sum`, `_count`), built when the registry is read.
 */
export class SeriesHistogram<L extends string> extends Histogram<L> {
  private readonly metricName: string;
  private readonly names: readonly L[];
  private readonly bounds: readonly number[];
  private readonly all = new Map<string, HistogramSeries>();

  constructor(config: SeriesHistogramConfig<L>) {
    super({ ...config, labelNames: [...config.labelNames], buckets: [...config.buckets] });
    this.metricName = config.name;
    this.names = config.labelNames;
    this.bounds = [...config.buckets].sort((a, b) => a - b);
  }

  /** The series of these label values (one object per label set, for the caller to keep). */
  series(labels: Record<L, string>): HistogramSeries {
    const key = this.names.map((n) => labels[n]).join('\u0000');
    let series = this.all.get(key);
    if (!series) {
      series = { labels: { ...labels }, perBucket: new Float64Array(this.bounds.length), sum: 0, count: 0 };
      this.all.set(key, series);
    }
    return series;
  }

  /** One observation in a series (a finite value; the caller checks). */
  record(series: HistogramSeries, value: number): void {
    const bounds = this.bounds;
    for (let i = 0; i < bounds.length; i++) {
      if (value <= bounds[i]!) {
        series.perBucket[i]! += 1;
        break;
      }
    }
    series.sum += value;
    series.count += 1;
  }

  /** Every series recorded so far. */
  recorded(): IterableIterator<HistogramSeries> {
    return this.all.values();
  }

  override reset(): void {
    super.reset();
    // prom-client's constructor resets too, before this class's fields exist.
    (this.all as Map<string, HistogramSeries> | undefined)?.clear();
  }

  /** The recorded series in prom-client's export form: labels of the series as shared labels. */
  private exported(): Value[] {
    const out: Value[] = [];
    const bucket = `${this.metricName}_bucket`;
    for (const s of this.all.values()) {
      let cumulative = 0;
      for (let i = 0; i < this.bounds.length; i++) {
        cumulative += s.perBucket[i]!;
        out.push(valuePair({ le: this.bounds[i]! }, cumulative, bucket, s.labels, true));
      }
      out.push(valuePair({ le: '+Inf' }, s.count, bucket, s.labels, true));
      out.push(valuePair({}, s.sum, `${this.metricName}_sum`, s.labels));
      out.push(valuePair({}, s.count, `${this.metricName}_count`, s.labels));
    }
    return out;
  }

  /**
   * What the registry writes out: prom-client's series, then these. Histogram's `get` (the JSON form)
   * calls this too, and merges each value's shared labels into its labels.
   */
  async getForPromString(): Promise<MetricObjectWithValues<Value>> {
    const base = await ownExport.call(this);
    return { ...base, values: [...base.values, ...this.exported()] };
  }
}

/** prom-client's own `getForPromString` (not in its type declarations). */
const ownExport = (
  Histogram.prototype as unknown as { getForPromString(): Promise<MetricObjectWithValues<Value>> }
).getForPromString;

function valuePair(
  labels: Record<string, string | number>,
  value: number,
  metricName: string,
  sharedLabels: Readonly<Record<string, string>>,
  isBucket = false,
): Value {
  // prom-client's own export form: the series' labels apart from the bucket's `le`; buckets carry an
  // exemplar field (none recorded).
  const pair = { labels, value, metricName, sharedLabels, ...(isBucket ? { exemplar: null } : {}) };
  return pair as unknown as Value;
}
