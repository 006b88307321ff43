// Database-independent: an in-memory metric.
import { Histogram, Registry } from 'prom-client';
import { describe, expect, it } from 'vitest';
import { SeriesHistogram } from '../../src/observability/series-histogram.js';

const BUCKETS = [0.01, 0.1, 1, 10];
const LABELS = ['route', 'method', 'status'] as const;

/** prom-client's own histogram and the series one, given the same observations. */
function both() {
  const theirs = new Registry();
  const ours = new Registry();
  const config = { name: 'h_seconds', help: 'h', labelNames: LABELS, buckets: BUCKETS };
  const reference = new Histogram({ ...config, labelNames: [...LABELS], registers: [theirs] });
  const series = new SeriesHistogram({ ...config, registers: [ours] });
  const observe = (labels: Record<(typeof LABELS)[number], string>, value: number) => {
    reference.observe(labels, value);
    series.record(series.series(labels), value);
  };
  return { theirs, ours, series, observe };
}

describe('SeriesHistogram', () => {
  it("writes out exactly what prom-client's histogram does for the same observations", async () => {
    const { theirs, ours, observe } = both();
    const a = { route: '/v1/chat/completions', method: 'POST', status: '200' };
    const b = { route: '/v1/evaluators/:evaluator', method: 'GET', status: '404' };
    // On a bound, between bounds, past the last one, and zero.
    for (const v of [0, 0.01, 0.05, 0.1, 0.5, 3, 10, 42]) observe(a, v);
    observe(b, 0.002);
    const text = await ours.metrics();
    expect(text).toBe(await theirs.metrics());
    expect(text).toContain(
      'h_seconds_bucket{le="0.1",route="/v1/chat/completions",method="POST",status="200"} 4',
    );
    expect(text).toContain('h_seconds_count{route="/v1/chat/completions",method="POST",status="200"} 8');
    expect(await ours.getMetricsAsJSON()).toEqual(await theirs.getMetricsAsJSON());
  });

  it('keeps one series per label set, and forgets them on reset', async () => {
    const { ours, series, observe } = both();
    const labels = { route: '/x', method: 'GET', status: '200' };
    expect(series.series(labels)).toBe(series.series({ ...labels }));
    observe(labels, 0.5);
    expect(await ours.metrics()).toContain('h_seconds_count{route="/x",method="GET",status="200"} 1');
    series.reset();
    expect(await ours.metrics()).not.toContain('route="/x"');
  });
});
