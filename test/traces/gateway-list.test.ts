import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Gateway, startGateway } from '../gateway/gateway-helpers.js';
import { sdkProvider, settled } from './helpers.js';

/**
 * Traces made only of gateway calls are listed: each recorded call writes a span row of its trace (the
 * trace it started, or the caller's under its traceparent), so `GET /v1/traces` and its filters see it.
 */
let g: Gateway;
beforeAll(async () => {
  g = await startGateway();
  g.mock.set({ reply: () => 'Hello from the mock upstream.' });
});
afterAll(async () => {
  await g.close();
});

const ask = (traceparent?: string) =>
  g
    .client(traceparent ? { headers: { traceparent } } : {})
    .chat.completions.create({ model: 'openai/gpt-4o-mini', messages: [{ role: 'user', content: 'Hi' }] })
    .withResponse();

describe('traces of gateway calls', () => {
  it('lists a trace started by a gateway call, with its totals, under the model filter', async () => {
    const h = g.h;
    const { response } = await ask();
    const logId = response.headers.get('x-evalgate-log-id')!;
    await settled(h);
    const log = await h.services.db
      .selectFrom('task_logs')
      .select(['trace_id', 'model'])
      .where('id', '=', logId)
      .executeTakeFirstOrThrow();
    const list = await h.call('GET', '/v1/traces?limit=100');
    expect(list.status, list.text).toBe(200);
    const listed = list.body.data.find((t: { id: string }) => t.id === log.trace_id);
    expect(listed).toMatchObject({
      name: `chat ${log.model}`,
      service_name: 'evalgate',
      models: [log.model],
      totals: { span_count: 1, error_count: 0, model_call_count: 1 },
    });
    expect(listed.totals.usage.total_tokens).toBeGreaterThan(0);
    const byModel = await h.call('GET', `/v1/traces?model=${encodeURIComponent(log.model!)}&limit=100`);
    expect(byModel.body.data.map((t: { id: string }) => t.id)).toContain(log.trace_id);
    const other = await h.call('GET', '/v1/traces?model=no-such-model');
    expect(other.body).toMatchObject({ data: [], total: 0 });
    const errors = await h.call('GET', '/v1/traces?errors=true&limit=100');
    expect(errors.body.data.map((t: { id: string }) => t.id)).not.toContain(log.trace_id);
    // The trace view shows the call once, from its task log.
    const view = await h.call('GET', `/v1/traces/${log.trace_id}`);
    expect(view.body.spans.map((s: any) => [s.source, s.model_call.task_log_id])).toEqual([
      ['gateway', logId],
    ]);
  });

  it('adds a call made under a traceparent to the application trace it joined', async () => {
    const h = g.h;
    const provider = sdkProvider(h, { protocol: 'json' });
    const tracer = provider.getTracer('app');
    let traceId = '';
    await tracer.startActiveSpan('handle request', async (root) => {
      traceId = root.spanContext().traceId;
      await ask(`00-${traceId}-${root.spanContext().spanId}-01`);
      root.end();
    });
    await provider.forceFlush();
    await provider.shutdown();
    await settled(h);
    const list = await h.call('GET', '/v1/traces?limit=100');
    const listed = list.body.data.filter((t: { id: string }) => t.id === traceId);
    expect(listed).toHaveLength(1);
    expect(listed[0]).toMatchObject({
      name: 'handle request',
      service_name: 'test-app',
      totals: { span_count: 2, model_call_count: 1 },
    });
    const view = await h.call('GET', `/v1/traces/${traceId}`);
    expect(view.body.spans.map((s: any) => [s.name.split(' ')[0], s.depth, s.source])).toEqual([
      ['handle', 0, 'otlp'],
      ['chat', 1, 'gateway'],
    ]);
    expect(view.body.totals).toMatchObject(listed[0].totals);
    // min_spans=2 hides the one-span traces of calls made without a traceparent, keeping this one.
    const joined = await h.call('GET', '/v1/traces?limit=100&min_spans=2');
    expect(joined.status).toBe(200);
    expect(joined.body.data.map((t: { id: string }) => t.id)).toContain(traceId);
    expect(joined.body.data.every((t: any) => t.totals.span_count >= 2)).toBe(true);
    expect(list.body.data.some((t: any) => t.totals.span_count === 1)).toBe(true);
    expect(joined.body.total).toBeLessThan(list.body.total);
    const bad = await h.call('GET', '/v1/traces?min_spans=0');
    expect(bad.status).toBe(422);
  });
});
