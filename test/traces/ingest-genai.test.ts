import { SpanKind, SpanStatusCode } from '@opentelemetry/api';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Harness, startHarness } from '../helpers/harness.js';
import { logsOf, sdkProvider, settled } from './helpers.js';

/**
 * The OpenTelemetry JS SDK with the official OTLP exporters (protobuf and JSON) emitting the GenAI
 * conventions by hand, in both forms: ≥ 1.37 attributes and the v1.36 span events.
 */
let h: Harness;
beforeAll(async () => {
  h = await startHarness();
  for (const label of ['agent', 'events', 'quiet']) {
    expect((await h.call('POST', '/v1/containers', { body: { label } })).status).toBe(201);
  }
});
afterAll(async () => {
  await h.close();
});

const INPUT = [
  { role: 'user', parts: [{ type: 'text', content: 'Weather in Paris?' }] },
  {
    role: 'assistant',
    parts: [{ type: 'tool_call', id: 'call_1', name: 'get_weather', arguments: { city: 'Paris' } }],
  },
  { role: 'tool', parts: [{ type: 'tool_call_response', id: 'call_1', response: 'sunny, 21C' }] },
];
const OUTPUT = [
  {
    role: 'assistant',
    parts: [
      { type: 'text', content: 'Checking Lyon too.' },
      { type: 'tool_call', id: 'call_2', name: 'get_weather', arguments: { city: 'Lyon' } },
    ],
    finish_reason: 'tool_call',
  },
];

describe('GenAI conventions ≥ 1.37 (attributes), protobuf exporter', () => {
  let traceId = '';

  it('stores the spans as a tree and the model call as a task log of the container', async () => {
    const provider = sdkProvider(h, { protocol: 'protobuf', resource: { 'evalgate.container': 'agent' } });
    const tracer = provider.getTracer('by-hand');
    await tracer.startActiveSpan('invoke_agent weather', async (agent) => {
      agent.setAttributes({ 'gen_ai.operation.name': 'invoke_agent', 'gen_ai.conversation.id': 'conv-1' });
      traceId = agent.spanContext().traceId;
      // Times a few milliseconds apart: siblings that start in the same millisecond (what is stored) have
      // no order of their own, and the tree below lists them by start.
      const t0 = Date.now();
      const chat = tracer.startSpan('chat gpt-4o-mini', { kind: SpanKind.CLIENT, startTime: t0 + 1 });
      chat.setAttributes({
        'gen_ai.operation.name': 'chat',
        'gen_ai.provider.name': 'openai',
        'gen_ai.request.model': 'gpt-4o-mini',
        'gen_ai.response.model': 'gpt-4o-mini',
        'gen_ai.usage.input_tokens': 1000,
        'gen_ai.usage.output_tokens': 500,
        'gen_ai.conversation.id': 'conv-1',
        'gen_ai.system_instructions': JSON.stringify([{ type: 'text', content: 'You are terse.' }]),
        'gen_ai.input.messages': JSON.stringify(INPUT),
        'gen_ai.output.messages': JSON.stringify(OUTPUT),
      });
      chat.end(t0 + 3);
      const tool = tracer.startSpan('execute_tool get_weather', { startTime: t0 + 5 });
      tool.setAttributes({ 'gen_ai.operation.name': 'execute_tool', 'gen_ai.tool.name': 'get_weather' });
      tool.setStatus({ code: SpanStatusCode.ERROR, message: 'timeout' });
      tool.end(t0 + 7);
      agent.end(t0 + 9);
    });
    await provider.forceFlush();
    await provider.shutdown();

    const logs = await logsOf(h, 'agent');
    expect(logs).toHaveLength(1);
    const log = logs[0];
    expect(log).toMatchObject({
      model: 'gpt-4o-mini',
      status: 'success',
      usage: { prompt_tokens: 1000, completion_tokens: 500, total_tokens: 1500 },
      metadata: { source: 'otlp', content_captured: true, convention: 'genai' },
      input: [
        { role: 'system', content: 'You are terse.' },
        { role: 'user', content: 'Weather in Paris?' },
        {
          role: 'assistant',
          content: null,
          tool_calls: [
            {
              id: 'call_1',
              type: 'function',
              function: { name: 'get_weather', arguments: '{"city":"Paris"}' },
            },
          ],
        },
        { role: 'tool', content: 'sunny, 21C', tool_call_id: 'call_1' },
      ],
    });
    expect(JSON.parse(log.output)).toEqual({
      content: 'Checking Lyon too.',
      tool_calls: [{ id: 'call_2', name: 'get_weather', arguments: '{"city":"Lyon"}' }],
    });
    // gpt-4o-mini at the bundled table's prices: 1000 in, 500 out.
    expect(log.cost).toBeGreaterThan(0);
    // gen_ai.conversation.id names the call's session, as an X-Evalgate-Session header does.
    const session = await h.call('GET', `/v1/sessions/${log.session_id}`);
    expect(session.status, session.text).toBe(200);
    expect(session.body).toMatchObject({ assigned_by: 'header', key: 'conv-1', turn_count: 1 });

    const trace = await h.call('GET', `/v1/traces/${traceId}`);
    expect(trace.status, trace.text).toBe(200);
    expect(trace.body.spans.map((s: any) => [s.name, s.depth, s.operation])).toEqual([
      ['invoke_agent weather', 0, 'invoke_agent'],
      ['chat gpt-4o-mini', 1, 'chat'],
      ['execute_tool get_weather', 1, 'execute_tool'],
    ]);
    const chat = trace.body.spans[1];
    expect(chat.model_call).toMatchObject({
      task_log_id: log.id,
      provider: 'openai',
      model: 'gpt-4o-mini',
      usage: { input_tokens: 1000, output_tokens: 500, total_tokens: 1500 },
      content_captured: true,
    });
    expect(chat.model_call.cost).toBeCloseTo(log.cost, 10);
    expect(trace.body).toMatchObject({
      name: 'invoke_agent weather',
      service_name: 'test-app',
      // The session's id; gen_ai.conversation.id is the key that named it.
      session_id: log.session_id,
      models: ['gpt-4o-mini'],
      totals: { span_count: 3, error_count: 1, model_call_count: 1 },
    });
    expect(trace.body.spans[2].status).toEqual({ code: 'error', message: 'timeout' });

    const list = await h.call('GET', '/v1/traces?container=agent');
    expect(list.body.total).toBe(1);
    expect(list.body.data[0]).toMatchObject({
      id: traceId,
      models: ['gpt-4o-mini'],
      totals: { span_count: 3 },
    });
    for (const [query, total] of [
      ['errors=true', 1],
      ['errors=false', 0],
      ['model=gpt-4o-mini', 1],
      ['model=other', 0],
      ['session=conv-1', 1],
      [`session=${log.session_id}`, 1],
      ['session=nope', 0],
      [`since=${encodeURIComponent(new Date(Date.now() + 60_000).toISOString())}`, 0],
      [`until=${encodeURIComponent(new Date(Date.now() + 60_000).toISOString())}`, 1],
    ] as const) {
      const res = await h.call('GET', `/v1/traces?container=agent&${query}`);
      expect(res.status, query).toBe(200);
      expect(res.body.total, query).toBe(total);
    }
  });

  it('answers 404 to another project, and for an unknown trace or container', async () => {
    const other = await h.key(['*'], 'traces-other');
    expect((await h.call('GET', `/v1/traces/${traceId}`, { key: other.key })).status).toBe(404);
    const list = await h.call('GET', '/v1/traces', { key: other.key });
    expect(list.body.total).toBe(0);
    expect((await h.call('GET', `/v1/traces/${'f'.repeat(32)}`)).status).toBe(404);
    expect((await h.call('GET', '/v1/traces?container=nope')).status).toBe(404);
    expect((await h.call('GET', '/v1/traces?errors=maybe')).status).toBe(422);
    expect((await h.call('GET', '/v1/traces?since=yesterday')).status).toBe(422);
  });
});

describe('GenAI conventions v1.36 (span events), JSON exporter', () => {
  it('reads the messages from the events', async () => {
    const provider = sdkProvider(h, { protocol: 'json', headers: { 'x-evalgate-container': 'events' } });
    const tracer = provider.getTracer('by-hand');
    const span = tracer.startSpan('chat gpt-4o', { kind: SpanKind.CLIENT });
    span.setAttributes({
      'gen_ai.operation.name': 'chat',
      'gen_ai.system': 'openai',
      'gen_ai.request.model': 'gpt-4o',
      'gen_ai.usage.input_tokens': 20,
      'gen_ai.usage.output_tokens': 4,
    });
    span.addEvent('gen_ai.system.message', { 'gen_ai.system': 'openai', content: 'Be brief.' });
    span.addEvent('gen_ai.user.message', { 'gen_ai.system': 'openai', content: 'Capital of France?' });
    span.addEvent('gen_ai.choice', {
      'gen_ai.system': 'openai',
      index: 0,
      finish_reason: 'stop',
      message: JSON.stringify({ role: 'assistant', content: 'Paris.' }),
    });
    span.end();
    await provider.forceFlush();
    await provider.shutdown();
    const [log] = await logsOf(h, 'events');
    expect(log).toMatchObject({
      model: 'gpt-4o',
      output: 'Paris.',
      input: [
        { role: 'system', content: 'Be brief.' },
        { role: 'user', content: 'Capital of France?' },
      ],
      usage: { prompt_tokens: 20, completion_tokens: 4 },
      metadata: { source: 'otlp', content_captured: true },
    });
  });

  it('keeps a call without recorded content as content_captured: false, with no output', async () => {
    const provider = sdkProvider(h, { protocol: 'json', headers: { 'x-evalgate-container': 'quiet' } });
    const span = provider.getTracer('by-hand').startSpan('chat gpt-4o', { kind: SpanKind.CLIENT });
    span.setAttributes({ 'gen_ai.operation.name': 'chat', 'gen_ai.request.model': 'gpt-4o' });
    span.end();
    await provider.forceFlush();
    await provider.shutdown();
    const [log] = await logsOf(h, 'quiet');
    expect(log).toMatchObject({ output: null, input: null, metadata: { content_captured: false } });
    const trace = await h.call('GET', `/v1/traces/${span.spanContext().traceId}`);
    expect(trace.body.spans[0].model_call.content_captured).toBe(false);
    await settled(h);
  });
});

describe("OpenLLMetry's flat gen_ai.prompt.{i} / gen_ai.completion.{i} attributes", () => {
  it('reads roles, contents and tool calls by index', async () => {
    expect((await h.call('POST', '/v1/containers', { body: { label: 'flat' } })).status).toBe(201);
    const provider = sdkProvider(h, { protocol: 'protobuf', headers: { 'x-evalgate-container': 'flat' } });
    const span = provider.getTracer('by-hand').startSpan('openai.chat', { kind: SpanKind.CLIENT });
    span.setAttributes({
      'llm.request.type': 'chat',
      'gen_ai.system': 'OpenAI',
      'gen_ai.request.model': 'gpt-4o-mini',
      'gen_ai.response.model': 'gpt-4o-mini-2024-07-18',
      'gen_ai.usage.prompt_tokens': 15,
      'gen_ai.usage.completion_tokens': 5,
      'gen_ai.prompt.0.role': 'system',
      'gen_ai.prompt.0.content': 'Be brief.',
      'gen_ai.prompt.1.role': 'user',
      'gen_ai.prompt.1.content': 'Weather in Rome?',
      'gen_ai.completion.0.role': 'assistant',
      'gen_ai.completion.0.finish_reason': 'tool_calls',
      'gen_ai.completion.0.tool_calls.0.id': 'call_r',
      'gen_ai.completion.0.tool_calls.0.name': 'get_weather',
      'gen_ai.completion.0.tool_calls.0.arguments': '{"city":"Rome"}',
    });
    span.end();
    await provider.forceFlush();
    await provider.shutdown();
    const [log] = await logsOf(h, 'flat');
    expect(log).toMatchObject({
      model: 'gpt-4o-mini-2024-07-18',
      input: [
        { role: 'system', content: 'Be brief.' },
        { role: 'user', content: 'Weather in Rome?' },
      ],
      usage: { prompt_tokens: 15, completion_tokens: 5 },
      metadata: { convention: 'openllmetry', content_captured: true },
    });
    expect(JSON.parse(log.output).tool_calls).toEqual([
      { id: 'call_r', name: 'get_weather', arguments: '{"city":"Rome"}' },
    ]);
  });
});
