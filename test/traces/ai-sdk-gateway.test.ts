import { createOpenAI } from '@ai-sdk/openai';
import { OpenTelemetry } from '@ai-sdk/otel';
import { context } from '@opentelemetry/api';
import { W3CTraceContextPropagator } from '@opentelemetry/core';
import { tool as aiTool, generateText, stepCountIs } from 'ai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import type { TaskLogRecord } from '../../src/capture/types.js';
import { INGESTED_LOG_PREFIX } from '../../src/capture/types.js';
import { type Gateway, startGateway } from '../gateway/gateway-helpers.js';
import { waitFor } from '../helpers/wait.js';
import { agentReply, time, weather } from '../sessions/agent-mock.js';
import { sdkProvider, settled } from './helpers.js';

/**
 * An application that both calls the model through the gateway (the AI SDK's OpenAI provider with its
 * base URL at Evalgate, the W3C `traceparent` of the SDK's model-call span on each request) and exports
 * its own spans (AI SDK 7 with `@ai-sdk/otel`, to Evalgate's OTLP endpoint): each model call is one task
 * log, the gateway's, with the span's details; its session counts each call once.
 */
let g: Gateway;
const MODEL = 'openai/gpt-4o-mini';
const City = z.object({ city: z.string() });
const propagator = new W3CTraceContextPropagator();

beforeAll(async () => {
  g = await startGateway();
  g.mock.set({ reply: agentReply });
});
afterAll(async () => {
  await g?.close();
});

/** `fetch` with the active span's `traceparent` (what an HTTP client instrumentation adds). */
const tracedFetch: typeof fetch = (input, init) => {
  const headers = new Headers(init?.headers);
  propagator.inject(context.active(), headers, { set: (carrier, k, v) => carrier.set(k, v) });
  return fetch(input, { ...init, headers });
};

/** One tool-calling run of the AI SDK through the gateway, its spans exported to Evalgate. */
async function agentRun(label: string, session: string, city: string, spansLater = false): Promise<void> {
  expect((await g.h.call('POST', '/v1/containers', { body: { label } })).status).toBe(201);
  const provider = sdkProvider(g.h, {
    protocol: 'json',
    resource: { 'evalgate.container': label },
    held: spansLater,
  });
  const openai = createOpenAI({
    apiKey: g.h.admin.key,
    baseURL: `${g.h.url}/v1`,
    headers: { 'x-evalgate-container': label, 'x-evalgate-session': session },
    fetch: tracedFetch,
  });
  const result = await generateText({
    model: openai.chat(MODEL),
    prompt: `Weather in ${city}?`,
    tools: {
      get_weather: aiTool({
        description: 'Weather',
        inputSchema: City,
        execute: async (a) => weather(a.city),
      }),
      get_time: aiTool({ description: 'Time', inputSchema: City, execute: async (a) => time(a.city) }),
    },
    stopWhen: stepCountIs(5),
    telemetry: {
      integrations: new OpenTelemetry({
        tracer: provider.getTracer('ai'),
        // The spans name the session too (what an application sending only spans would do).
        enrichSpan: () => ({ 'gen_ai.conversation.id': session }),
      }),
    },
  });
  expect(result.text).toBe(`In ${city} it is sunny and noon.`);
  expect(result.steps).toHaveLength(3);
  if (spansLater) {
    // The gateway's task logs are stored before any span is sent.
    const logs = await g.logs(label);
    expect(logs.map((l) => [l.id.startsWith(INGESTED_LOG_PREFIX), l.metadata.sources])).toEqual([
      [false, undefined],
      [false, undefined],
      [false, undefined],
    ]);
  }
  await provider.forceFlush();
  await provider.shutdown();
  await settled(g.h);
  await g.h.app.services.logWriter.flush();
}

/** The container's one session, checked: three calls, each once, with the gateway's usage and cost. */
async function expectOneSessionOfThreeCalls(label: string, session: string, city: string) {
  const logs = await g.logs(label);
  // One task log per model call: the gateway's, with the SDK span's details.
  expect(logs.map((l) => l.id.startsWith(INGESTED_LOG_PREFIX))).toEqual([false, false, false]);
  for (const log of logs) {
    expect(log.metadata).toMatchObject({
      sources: ['gateway', 'otlp'],
      span_name: `chat ${MODEL}`,
      convention: 'genai',
    });
    expect(log.usage.prompt_tokens).toBeGreaterThan(0);
    expect(log.cost).toBeGreaterThan(0);
  }
  expect(new Set(logs.map((l) => l.trace_id)).size).toBe(1);
  // In the trace, each call is the gateway's span under the SDK's `chat` span, which has no call of its own.
  const trace = (await g.h.call('GET', `/v1/traces/${logs[0].trace_id}`)).body;
  const spans = new Map<string, any>(trace.spans.map((s: any) => [s.span_id, s]));
  for (const log of logs) {
    const call = spans.get(log.span_id);
    expect(call).toMatchObject({ source: 'gateway', model_call: { task_log_id: log.id } });
    expect(call.parent_span_id).toBe(log.metadata.span_id);
    expect(spans.get(call.parent_span_id)).toMatchObject({ name: `chat ${MODEL}`, model_call: null });
  }
  expect(trace.totals.model_call_count).toBe(3);
  const listed = await g.h.call('GET', `/v1/traces?container=${label}`);
  expect(listed.body.data.map((t: any) => t.totals?.model_call_count ?? t.model_call_count)).toEqual([3]);
  const list = await g.h.call('GET', `/v1/sessions?container=${label}`);
  expect(list.body.data.map((s: any) => [s.key, s.turn_count])).toEqual([[session, 3]]);
  const detail = (await g.h.call('GET', `/v1/sessions/${list.body.data[0].id}`)).body;
  expect(detail.tool_calls.map((c: any) => [c.name, c.arguments, c.result])).toEqual([
    ['get_weather', { city }, weather(city)],
    ['get_time', { city }, time(city)],
  ]);
  expect(detail.turns.map((t: any) => t.output.tool_calls.length)).toEqual([1, 1, 0]);
  // Tokens and cost of the three calls, counted once.
  const sum = (f: (l: any) => number) => logs.reduce((n, l) => n + f(l), 0);
  expect(detail.usage).toMatchObject({
    prompt_tokens: sum((l) => l.usage.prompt_tokens),
    completion_tokens: sum((l) => l.usage.completion_tokens),
  });
  expect(detail.cost).toBeCloseTo(
    sum((l) => l.cost),
    10,
  );
  expect(detail.latency_ms).toBeCloseTo(
    sum((l) => l.latency_ms),
    3,
  );
  return { logs, session: list.body.data[0] };
}

/** A sessions run of `tool_call_match` (exact) against the expected trajectory of the session's key. */
async function toolCallMatch(label: string, session: string, city: string) {
  const ds = await g.h.call('POST', '/v1/datasets', {
    body: {
      label: `${label}-expected`,
      items: [
        {
          input: `Weather in ${city}?`,
          expected_tool_calls: [
            { name: 'get_weather', arguments: { city } },
            { name: 'get_time', arguments: { city } },
          ],
          metadata: { session_key: session },
        },
      ],
    },
  });
  expect(ds.status, ds.text).toBe(201);
  const ev = await g.h.call('POST', '/v1/evaluators', {
    body: { type: 'tool_call_match', name: `${label}-tcm`, match_mode: 'exact' },
  });
  expect(ev.status, ev.text).toBe(201);
  const created = await g.h.call('POST', '/v1/evaluation/runs', {
    body: {
      container: label,
      evaluators: [`${label}-tcm`],
      sample: { type: 'sessions', container: label },
      ground_truth: { type: 'dataset', dataset: `${label}-expected` },
    },
  });
  expect(created.status, created.text).toBe(201);
  const id = created.body.id as string;
  await waitFor(
    async () =>
      ['completed', 'error', 'cancelled'].includes(
        (await g.h.call('GET', `/v1/evaluation/runs/${id}`)).body.status,
      ),
    60_000,
  );
  const samples = (await g.h.call('GET', `/v1/evaluation/runs/${id}/samples?limit=100`)).body.data;
  expect(samples).toHaveLength(1);
  return samples[0];
}

describe('the AI SDK through the gateway with its own spans: one task log per model call', () => {
  it('a multi-step tool run: one session, three calls once each, a correct tool_call_match verdict', async () => {
    await agentRun('aisdk-gw', 'lima-run', 'Lima');
    const { logs } = await expectOneSessionOfThreeCalls('aisdk-gw', 'lima-run', 'Lima');
    // Each call's input is what the gateway received; its answer the upstream's.
    expect(logs[0].input).toEqual([{ role: 'user', content: 'Weather in Lima?' }]);
    const sample = await toolCallMatch('aisdk-gw', 'lima-run', 'Lima');
    expect(sample).toMatchObject({ status: 'scored', score: 1, passed: true });
    expect(sample.extra).toMatchObject({ precision: 1, recall: 1, pass: true, actual: 2, expected: 2 });
  });

  it('the spans arrive after the gateway’s task logs are stored: their details join those logs', async () => {
    await agentRun('aisdk-early', 'bogota-run', 'Bogota', true);
    await expectOneSessionOfThreeCalls('aisdk-early', 'bogota-run', 'Bogota');
    const sample = await toolCallMatch('aisdk-early', 'bogota-run', 'Bogota');
    expect(sample).toMatchObject({ status: 'scored', score: 1, passed: true });
  });

  it('the spans arrive before the gateway’s task logs are written: still one task log per call', async () => {
    const writer = g.h.app.services.logWriter;
    const write = writer.write.bind(writer);
    const held: TaskLogRecord[] = [];
    // The gateway's records are held back (a slow writer) until the spans' logs are stored.
    writer.write = (record) => {
      if (record.id.startsWith(INGESTED_LOG_PREFIX)) write(record);
      else held.push(record);
    };
    try {
      await agentRun('aisdk-late', 'quito-run', 'Quito');
      const early = await g.logs('aisdk-late');
      expect(early.map((l) => l.id.startsWith(INGESTED_LOG_PREFIX))).toEqual([true, true, true]);
    } finally {
      writer.write = write;
    }
    expect(held).toHaveLength(3);
    for (const record of held) write(record);
    await writer.flush();
    const { logs } = await expectOneSessionOfThreeCalls('aisdk-late', 'quito-run', 'Quito');
    // The gateway's ids, those its answers gave the client.
    expect(logs.map((l) => l.id).sort()).toEqual(held.map((r) => r.id).sort());
    const sample = await toolCallMatch('aisdk-late', 'quito-run', 'Quito');
    expect(sample).toMatchObject({ status: 'scored', score: 1, passed: true });
  });
});
