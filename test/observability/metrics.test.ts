import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createMetrics } from '../../src/observability/metrics.js';
import { type MetricsServer, startMetricsServer } from '../../src/observability/server.js';
import { type Harness, startHarness } from '../helpers/harness.js';
import { waitFor } from '../helpers/wait.js';

interface Sample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

/** The samples of a Prometheus text exposition (comments skipped, label values unescaped). */
function parse(body: string): Sample[] {
  const samples: Sample[] = [];
  for (const line of body.split('\n')) {
    if (line === '' || line.startsWith('#')) continue;
    const m = /^([a-zA-Z_:][\w:]*)(?:\{(.*)\})? (\S+)$/.exec(line);
    if (!m) throw new Error(`not an exposition line: ${line}`);
    const labels: Record<string, string> = {};
    for (const l of (m[2] ?? '').matchAll(/(\w+)="((?:[^"\\]|\\.)*)"/g))
      labels[l[1]!] = l[2]!.replace(/\\(.)/g, (_, c: string) => (c === 'n' ? '\n' : c));
    const value = m[3] === '+Inf' ? Number.POSITIVE_INFINITY : Number(m[3]);
    samples.push({ name: m[1]!, labels, value });
  }
  return samples;
}

/** Samples of `name` whose labels include `labels`. */
const find = (samples: Sample[], name: string, labels: Record<string, string> = {}) =>
  samples.filter((s) => s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v));

/** The value of the one sample of `name` with exactly these labels. */
function value(samples: Sample[], name: string, labels: Record<string, string> = {}): number {
  const exact = find(samples, name, labels).filter(
    (s) => Object.keys(s.labels).length === Object.keys(labels).length,
  );
  expect(exact, `${name} ${JSON.stringify(labels)}`).toHaveLength(1);
  return exact[0]!.value;
}

describe('createMetrics', () => {
  it('renders each recorded series with its labels and values', async () => {
    const metrics = createMetrics({ defaultMetrics: false });
    metrics.httpRequest('/v1/evaluators', 'GET', 200, 0.02);
    metrics.httpRequest('/v1/evaluators', 'GET', 200, 0.02);
    metrics.httpRequest('/v1/evaluators/:evaluator', 'GET', 404, 0.3);
    metrics.httpRequest('unmatched', 'BREW', 999, 0.001);
    metrics.upstreamCall('openai/gpt-4o-mini', 'judge', 'ok', 0.5);
    metrics.upstreamCall('openai/gpt-4o-mini', 'judge', 'ok', 1.5);
    metrics.upstreamCall('local/m', 'generation', 'rate_limited', 90);
    metrics.positionsScored(5);
    metrics.positionsScored(2);
    metrics.positionsScored(-1); // ignored: a counter only goes up
    metrics.chunksInFlight(1);
    metrics.chunksInFlight(1);
    metrics.chunksInFlight(-1);
    metrics.setQueueDepth(async () => ({
      production: { waiting: 3, active: 1 },
      staging: { waiting: 0, active: 0, delayed: 2 },
    }));
    metrics.setLogWriter(() => ({ buffered: 4, failed: 1, written: 10 }));
    metrics.setSpanLane(() => ({ accepted: 120, buffered: 20, failed: 3, written: 97 }));

    const { contentType, body } = await metrics.render();
    expect(contentType).toMatch(/^text\/plain; version=0\.0\.4/);
    const s = parse(body);

    const http = { route: '/v1/evaluators', method: 'GET', status: '200' };
    expect(value(s, 'evalgate_http_request_duration_seconds_count', http)).toBe(2);
    expect(value(s, 'evalgate_http_request_duration_seconds_sum', http)).toBeCloseTo(0.04);
    expect(value(s, 'evalgate_http_request_duration_seconds_bucket', { ...http, le: '0.01' })).toBe(0);
    expect(value(s, 'evalgate_http_request_duration_seconds_bucket', { ...http, le: '0.025' })).toBe(2);
    expect(value(s, 'evalgate_http_request_duration_seconds_bucket', { ...http, le: '+Inf' })).toBe(2);
    const notFound = { route: '/v1/evaluators/:evaluator', method: 'GET', status: '404' };
    expect(value(s, 'evalgate_http_request_duration_seconds_count', notFound)).toBe(1);
    // Unknown methods and impossible statuses collapse, so that callers cannot grow the label set.
    const odd = { route: 'unmatched', method: 'other', status: 'other' };
    expect(value(s, 'evalgate_http_request_duration_seconds_count', odd)).toBe(1);

    const judge = { model: 'openai/gpt-4o-mini', kind: 'judge', outcome: 'ok' };
    expect(value(s, 'evalgate_upstream_calls_total', judge)).toBe(2);
    expect(value(s, 'evalgate_upstream_call_duration_seconds_count', judge)).toBe(2);
    expect(value(s, 'evalgate_upstream_call_duration_seconds_sum', judge)).toBeCloseTo(2);
    expect(value(s, 'evalgate_upstream_call_duration_seconds_bucket', { ...judge, le: '0.01' })).toBe(0);
    expect(value(s, 'evalgate_upstream_call_duration_seconds_bucket', { ...judge, le: '1' })).toBe(1);
    expect(value(s, 'evalgate_upstream_call_duration_seconds_bucket', { ...judge, le: '120' })).toBe(2);
    const limited = { model: 'local/m', kind: 'generation', outcome: 'rate_limited' };
    expect(value(s, 'evalgate_upstream_calls_total', limited)).toBe(1);
    expect(value(s, 'evalgate_upstream_call_duration_seconds_bucket', { ...limited, le: '60' })).toBe(0);
    expect(value(s, 'evalgate_upstream_call_duration_seconds_bucket', { ...limited, le: '120' })).toBe(1);

    expect(value(s, 'evalgate_positions_scored_total')).toBe(7);
    expect(value(s, 'evalgate_chunks_in_flight')).toBe(1);

    expect(find(s, 'evalgate_queue_depth')).toHaveLength(5);
    expect(value(s, 'evalgate_queue_depth', { environment: 'production', state: 'waiting' })).toBe(3);
    expect(value(s, 'evalgate_queue_depth', { environment: 'production', state: 'active' })).toBe(1);
    expect(value(s, 'evalgate_queue_depth', { environment: 'staging', state: 'delayed' })).toBe(2);
    expect(find(s, 'evalgate_queue_depth', { environment: 'production', state: 'delayed' })).toEqual([]);

    expect(value(s, 'evalgate_log_writer_backlog')).toBe(4);
    expect(value(s, 'evalgate_log_writer_dropped_total')).toBe(1);
    expect(value(s, 'evalgate_log_writer_written_total')).toBe(10);
    expect(body).toContain('# TYPE evalgate_log_writer_dropped_total counter');
    expect(value(s, 'evalgate_span_lane_backlog')).toBe(20);
    expect(value(s, 'evalgate_span_lane_dropped_total')).toBe(3);
    expect(value(s, 'evalgate_span_lane_written_total')).toBe(97);
    expect(body).toContain('# TYPE evalgate_span_lane_written_total counter');
    // No process metrics were asked for.
    expect(find(s, 'evalgate_process_cpu_user_seconds_total')).toEqual([]);
  });

  it('reads the collectors at each scrape', async () => {
    const metrics = createMetrics({ defaultMetrics: false });
    let waiting = 1;
    metrics.setQueueDepth(async () => ({ production: { waiting, active: 0 } }));
    const depth = async () =>
      value(parse((await metrics.render()).body), 'evalgate_queue_depth', {
        environment: 'production',
        state: 'waiting',
      });
    expect(await depth()).toBe(1);
    waiting = 7;
    expect(await depth()).toBe(7);
  });

  it('leaves out the series of a collector that throws, and renders the rest', async () => {
    const metrics = createMetrics({ defaultMetrics: false });
    metrics.positionsScored(3);
    metrics.setQueueDepth(async () => {
      throw new Error('redis down');
    });
    metrics.setLogWriter(() => {
      throw new Error('writer gone');
    });
    const s = parse((await metrics.render()).body);
    expect(value(s, 'evalgate_positions_scored_total')).toBe(3);
    for (const name of [
      'evalgate_queue_depth',
      'evalgate_log_writer_backlog',
      'evalgate_log_writer_dropped_total',
      'evalgate_log_writer_written_total',
    ])
      expect(find(s, name), name).toEqual([]);
  });

  it('keeps the model label bounded', async () => {
    const metrics = createMetrics({ defaultMetrics: false });
    for (let i = 0; i < 250; i++) metrics.upstreamCall(`model-${i}`, 'judge', 'ok', 0.1);
    const s = parse((await metrics.render()).body);
    const series = find(s, 'evalgate_upstream_calls_total');
    expect(series.length).toBeLessThanOrEqual(201);
    expect(value(s, 'evalgate_upstream_calls_total', { model: 'other', kind: 'judge', outcome: 'ok' })).toBe(
      50,
    );
    expect(series.reduce((sum, x) => sum + x.value, 0)).toBe(250);
  });

  it('has its own registry per instance, with process metrics by default', async () => {
    const a = createMetrics();
    const b = createMetrics();
    a.positionsScored(2);
    const sa = parse((await a.render()).body);
    const sb = parse((await b.render()).body);
    expect(value(sa, 'evalgate_positions_scored_total')).toBe(2);
    expect(value(sb, 'evalgate_positions_scored_total')).toBe(0);
    expect(find(sa, 'evalgate_process_cpu_user_seconds_total')).toHaveLength(1);
    expect(find(sb, 'evalgate_nodejs_heap_size_used_bytes')).toHaveLength(1);
  });
});

describe('GET /metrics on the API server', () => {
  let h: Harness;
  beforeAll(async () => {
    h = await startHarness();
  });
  afterAll(async () => {
    await h.close();
  });

  it('answers 401 without a key and 403 for a key without metrics:read, in the envelope', async () => {
    const anonymous = await h.call('GET', '/metrics', { key: null });
    expect(anonymous.status).toBe(401);
    expect(anonymous.body).toEqual({ error: { code: 'invalid_api_key', message: expect.any(String) } });
    const { key } = await h.key(['evaluators:read']);
    const denied = await h.call('GET', '/metrics', { key });
    expect(denied.status).toBe(403);
    expect(denied.body.error.code).toBe('permission_denied');
  });

  it('counts requests per route template, for a key with metrics:read', async () => {
    const { key } = await h.key(['metrics:read']);
    const calls = 4;
    for (let i = 0; i < calls; i++) expect((await h.call('GET', '/v1/evaluators')).status).toBe(200);
    expect((await h.call('GET', '/v1/evaluators/no-such-one')).status).toBe(404);
    expect((await h.call('GET', '/no/such/path', { unchecked: true })).status).toBe(404);

    const scrape = async () => {
      const res = await h.call('GET', '/metrics', { key });
      expect(res.status).toBe(200);
      expect(res.headers.get('content-type')).toMatch(/^text\/plain/);
      return parse(res.text);
    };
    const count = (s: Sample[], route: string, status: string) =>
      find(s, 'evalgate_http_request_duration_seconds_count', { route, method: 'GET', status })[0]?.value ??
      0;
    // onResponse runs once the response is out: the last call may be recorded just after the client has it.
    await waitFor(async () => count(await scrape(), '/v1/evaluators', '200') >= calls);
    const s = await scrape();
    expect(count(s, '/v1/evaluators/:evaluator', '404')).toBeGreaterThanOrEqual(1);
    expect(count(s, 'unmatched', '404')).toBeGreaterThanOrEqual(1);
    // The scrapes themselves are counted, the denied ones included.
    expect(count(s, '/metrics', '200')).toBeGreaterThanOrEqual(1);
    // The app's log writer is wired in; process metrics are on.
    expect(find(s, 'evalgate_log_writer_written_total')).toHaveLength(1);
    // On Linux prom-client reads it from /proc/self/status, always there; elsewhere from
    // process.memoryUsage(), which may fail (then the gauge has no sample).
    const resident = find(s, 'evalgate_process_resident_memory_bytes');
    if (process.platform === 'linux') expect(resident).toHaveLength(1);
    else expect(resident.length).toBeLessThanOrEqual(1);
    expect(find(s, 'evalgate_nodejs_eventloop_lag_seconds')).toHaveLength(1);
  });

  it('counts the spans the span lane stores', async () => {
    const { key } = await h.key(['metrics:read']);
    const written = async () =>
      find(parse((await h.call('GET', '/metrics', { key })).text), 'evalgate_span_lane_written_total')[0]
        ?.value ?? -1;
    const before = await written();
    expect(before).toBeGreaterThanOrEqual(0);
    const now = BigInt(Date.now()) * 1_000_000n;
    const span = (spanId: string) => ({
      traceId: '5b8efff798038103d269b633813fc60c',
      spanId,
      name: 'step',
      kind: 1,
      startTimeUnixNano: String(now),
      endTimeUnixNano: String(now + 1_000_000n),
    });
    const res = await h.call('POST', '/v1/traces', {
      body: {
        resourceSpans: [{ scopeSpans: [{ spans: [span('eee19b7ec3c1b174'), span('eee19b7ec3c1b175')] }] }],
      },
    });
    expect(res.status, res.text).toBe(200);
    await waitFor(async () => (await written()) >= before + 2);
    expect(await written()).toBe(before + 2);
  });

  it("answers another project's key with metrics:read too", async () => {
    // Metrics are per process, not per tenant: they mix every project's traffic, and the metrics:read
    // permission (given to operators' keys) is what protects them, whatever the key's project.
    const other = await h.key(['metrics:read'], 'another-project');
    const res = await h.call('GET', '/metrics', { key: other.key });
    expect(res.status).toBe(200);
    expect(find(parse(res.text), 'evalgate_http_request_duration_seconds_count').length).toBeGreaterThan(0);
  });

  it('is documented as text/plain under the metrics tag', async () => {
    const doc = (await h.call('GET', '/openapi.json', { key: null, unchecked: true })).body as any;
    const op = doc.paths['/metrics'].get;
    expect(op.tags).toEqual(['metrics']);
    expect(op.responses['200'].content['text/plain'].schema.type).toBe('string');
    expect(Object.keys(op.responses)).toEqual(expect.arrayContaining(['401', '403']));
  });
});

describe('startMetricsServer (workers)', () => {
  let server: MetricsServer;
  beforeAll(async () => {
    const metrics = createMetrics({ defaultMetrics: false });
    metrics.positionsScored(9);
    server = await startMetricsServer({
      host: '127.0.0.1',
      port: 0,
      metrics,
      authorize: async (header) => {
        if (header === 'Bearer boom') throw new Error('database down');
        if (header === 'Bearer reader') return 'ok';
        return header === 'Bearer writer' ? 'forbidden' : 'unauthorized';
      },
    });
  });
  afterAll(async () => {
    await server.close();
  });

  const get = (path: string, key?: string, method = 'GET') =>
    fetch(server.url + path, { method, headers: key ? { authorization: `Bearer ${key}` } : {} });

  async function expectEnvelope(res: Response, status: number, code: string) {
    expect(res.status).toBe(status);
    expect(res.headers.get('content-type')).toMatch(/^application\/json/);
    expect(await res.json()).toEqual({ error: { code, message: expect.any(String) } });
  }

  it('binds a free port for port 0 and serves the metrics to an authorized key', async () => {
    expect(server.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    expect(server.url).not.toMatch(/:0$/);
    const res = await get('/metrics', 'reader');
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/^text\/plain; version=0\.0\.4/);
    expect(value(parse(await res.text()), 'evalgate_positions_scored_total')).toBe(9);
  });

  it('answers errors in the envelope', async () => {
    await expectEnvelope(await get('/metrics'), 401, 'invalid_api_key');
    await expectEnvelope(await get('/metrics', 'nobody'), 401, 'invalid_api_key');
    await expectEnvelope(await get('/metrics', 'writer'), 403, 'permission_denied');
    await expectEnvelope(await get('/other', 'reader'), 404, 'not_found');
    await expectEnvelope(await get('/metrics', 'reader', 'POST'), 405, 'method_not_allowed');
    await expectEnvelope(await get('/metrics', 'boom'), 500, 'internal_error');
  });
});
