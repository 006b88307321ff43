import { context, SpanKind, trace } from '@opentelemetry/api';
import { W3CTraceContextPropagator } from '@opentelemetry/core';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { callTrace } from '../../src/capture/traceparent.js';
import { newTraceId } from '../../src/shared/ids.js';
import { type Gateway, startGateway } from '../gateway/gateway-helpers.js';
import { sdkProvider, settled } from './helpers.js';

/**
 * An application instrumented with the OpenTelemetry SDK calls the gateway with the official `openai`
 * client inside its own span, the W3C `traceparent` injected: the recorded call is a span of the
 * application's trace, a child of that span, with the application's spans around it.
 */
let g: Gateway;
beforeAll(async () => {
  g = await startGateway();
  g.mock.set({ reply: () => 'Hello from the mock upstream.' });
});
afterAll(async () => {
  await g.close();
});

describe('gateway calls join the caller’s trace', () => {
  it('records the call as a child span of the application span, beside the application spans', async () => {
    const h = g.h;
    const provider = sdkProvider(h, { protocol: 'protobuf' });
    const tracer = provider.getTracer('app');
    const propagator = new W3CTraceContextPropagator();
    const client = new OpenAI({ baseURL: `${h.url}/v1`, apiKey: h.admin.key, maxRetries: 0 });
    let traceId = '';
    let callSpanId = '';
    let logId = '';
    await tracer.startActiveSpan('handle request', { kind: SpanKind.SERVER }, async (root) => {
      traceId = root.spanContext().traceId;
      await tracer.startActiveSpan('answer question', async (step) => {
        callSpanId = step.spanContext().spanId;
        const headers: Record<string, string> = {};
        propagator.inject(context.active(), headers, {
          set: (carrier, key, value) => {
            (carrier as Record<string, string>)[key] = value;
          },
        });
        expect(headers.traceparent).toMatch(/^00-/);
        const { response } = await client.chat.completions
          .create({ model: 'openai/gpt-4o-mini', messages: [{ role: 'user', content: 'Hi' }] }, { headers })
          .withResponse();
        logId = response.headers.get('x-evalgate-log-id')!;
        step.end();
      });
      tracer.startSpan('render').end();
      root.end();
    });
    await provider.forceFlush();
    await provider.shutdown();
    await settled(h);

    const res = await h.call('GET', `/v1/traces/${traceId}`);
    expect(res.status, res.text).toBe(200);
    const spans = res.body.spans as any[];
    expect(spans.map((s) => [s.name, s.depth, s.source])).toEqual([
      ['handle request', 0, 'otlp'],
      ['answer question', 1, 'otlp'],
      ['chat openai/gpt-4o-mini', 2, 'gateway'],
      ['render', 1, 'otlp'],
    ]);
    const call = spans[2];
    expect(call.parent_span_id).toBe(callSpanId);
    expect(call.span_id).toMatch(/^[0-9a-f]{16}$/);
    expect(call.span_id).not.toBe(callSpanId);
    expect(call.model_call).toMatchObject({
      task_log_id: logId,
      model: 'openai/gpt-4o-mini',
      usage: { input_tokens: 12, output_tokens: 7, total_tokens: 19 },
    });
    expect(call.model_call.cost).toBeGreaterThan(0);
    expect(res.body.totals).toMatchObject({ span_count: 4, model_call_count: 1 });
    // The task log names its trace and span, so a log leads to its trace.
    const logs = await h.call('GET', '/v1/containers/default/logs?limit=100');
    const log = (logs.body.data as any[]).find((l) => l.id === logId);
    expect(log).toMatchObject({ trace_id: traceId, span_id: call.span_id });
    // Another project's key sees no such trace.
    const other = await h.key(['*'], 'join-other');
    expect((await h.call('GET', `/v1/traces/${traceId}`, { key: other.key })).status).toBe(404);
    expect(trace.getActiveSpan()).toBeUndefined();
  });

  it('gives a call without a valid traceparent a trace and span of its own', async () => {
    const h = g.h;
    const ids: string[] = [];
    for (const traceparent of [undefined, 'garbage', `00-${'0'.repeat(32)}-${'1'.repeat(16)}-01`]) {
      const { response } = await g
        .client(traceparent ? { headers: { traceparent } } : {})
        .chat.completions.create({ model: 'openai/gpt-4o-mini', messages: [{ role: 'user', content: 'Hi' }] })
        .withResponse();
      ids.push(response.headers.get('x-evalgate-log-id')!);
    }
    await settled(h);
    const rows = await h.services.db
      .selectFrom('task_logs')
      .select(['id', 'trace_id', 'span_id', 'parent_span_id'])
      .where('id', 'in', ids)
      .execute();
    expect(rows).toHaveLength(3);
    for (const r of rows) {
      expect(r.trace_id).toMatch(/^[0-9a-f]{32}$/);
      expect(r.trace_id).not.toBe('0'.repeat(32));
      expect(r.span_id).toMatch(/^[0-9a-f]{16}$/);
      expect(r.parent_span_id).toBeNull();
      const own = await h.call('GET', `/v1/traces/${r.trace_id}`);
      expect(own.body.spans.map((s: any) => s.source)).toEqual(['gateway']);
    }
    expect(new Set(rows.map((r) => r.trace_id)).size).toBe(3);
  });

  it('reads traceparent as W3C Trace Context says', () => {
    const t = '0af7651916cd43dd8448eb211c80319c';
    const p = 'b7ad6b7169203331';
    expect(callTrace(`00-${t}-${p}-01`)).toMatchObject({ traceId: t, parentSpanId: p });
    // A later version may add fields; version 00 may not.
    expect(callTrace(`01-${t}-${p}-01-extra`)).toMatchObject({ traceId: t, parentSpanId: p });
    for (const bad of [
      `00-${t}-${p}-01-extra`,
      `ff-${t}-${p}-01`,
      `00-${t.toUpperCase()}-${p}-01`,
      `00-${t}-${'0'.repeat(16)}-01`,
      `00-${t}-${p}`,
      '',
    ]) {
      const got = callTrace(bad);
      expect(got.parentSpanId, bad).toBeUndefined();
      expect(got.traceId).not.toBe(t);
    }
  });

  it('starts traces whose ids sort by time, random in their last 10 bytes', () => {
    const early = newTraceId(Date.parse('2026-01-01T00:00:00Z'));
    const late = newTraceId(Date.parse('2026-01-01T00:00:00.001Z'));
    expect(early < late).toBe(true);
    expect(early.slice(0, 12)).toBe(Date.parse('2026-01-01T00:00:00Z').toString(16).padStart(12, '0'));
    const fresh = Array.from({ length: 50 }, () => callTrace(undefined).traceId);
    for (const id of fresh) expect(id).toMatch(/^[0-9a-f]{32}$/);
    expect(new Set(fresh.map((id) => id.slice(12))).size).toBe(50);
    // Made one after another, they never sort before an earlier one's millisecond.
    const times = fresh.map((id) => Number.parseInt(id.slice(0, 12), 16));
    expect(times).toEqual([...times].sort((a, b) => a - b));
    expect(Math.abs(times[0]! - Date.now())).toBeLessThan(60_000);
  });
});
