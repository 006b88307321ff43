import { SpanKind, SpanStatusCode } from '@opentelemetry/api';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Evalgate, NotFoundError, UnprocessableEntityError } from '../../src/client/index.js';
import { evalgate, evalgateJson } from '../cli/cli-helpers.js';
import { clientOf } from '../client/helpers.js';
import { type Harness, startHarness } from '../helpers/harness.js';
import { sdkProvider, settled } from '../traces/helpers.js';

/** The client's `traces` resource and `evalgate traces list|get` against a server holding OTLP traces. */

let h: Harness;
let client: Evalgate;
const ids = { agent: '', plain: '' };

beforeAll(async () => {
  h = await startHarness();
  expect((await h.call('POST', '/v1/containers', { body: { label: 'agent' } })).status).toBe(201);
  client = clientOf(h);
  const provider = sdkProvider(h, { protocol: 'protobuf', resource: { 'evalgate.container': 'agent' } });
  const tracer = provider.getTracer('faces');
  await tracer.startActiveSpan('invoke_agent planner', async (agent) => {
    ids.agent = agent.spanContext().traceId;
    agent.setAttributes({ 'gen_ai.operation.name': 'invoke_agent', 'gen_ai.conversation.id': 'conv-9' });
    const chat = tracer.startSpan('chat gpt-4o-mini', { kind: SpanKind.CLIENT });
    chat.setAttributes({
      'gen_ai.operation.name': 'chat',
      'gen_ai.provider.name': 'openai',
      'gen_ai.request.model': 'gpt-4o-mini',
      'gen_ai.usage.input_tokens': 40,
      'gen_ai.usage.output_tokens': 10,
      'gen_ai.input.messages': JSON.stringify([
        { role: 'user', parts: [{ type: 'text', content: 'Plan it' }] },
      ]),
      'gen_ai.output.messages': JSON.stringify([
        { role: 'assistant', parts: [{ type: 'text', content: 'Step one' }], finish_reason: 'stop' },
      ]),
    });
    chat.end();
    const tool = tracer.startSpan('execute_tool search');
    tool.setAttributes({ 'gen_ai.operation.name': 'execute_tool', 'gen_ai.tool.name': 'search' });
    tool.setStatus({ code: SpanStatusCode.ERROR, message: 'timeout' });
    tool.end();
    agent.end();
  });
  await tracer.startActiveSpan('GET /health', async (span) => {
    ids.plain = span.spanContext().traceId;
    span.end();
  });
  await provider.forceFlush();
  await provider.shutdown();
  await settled(h);
}, 60_000);

afterAll(async () => {
  await h?.close();
});

describe('traces through the TypeScript client', () => {
  it('lists traces with filters and reads one as a span tree', async () => {
    const all = [];
    for await (const t of client.traces.list()) all.push(t.id);
    expect(all.sort()).toEqual([ids.agent, ids.plain].sort());
    const withModel = await client.traces.list({ model: 'gpt-4o-mini' });
    expect(withModel.data.map((t) => t.id)).toEqual([ids.agent]);
    const failing = await client.traces.list({ errors: true });
    expect(failing.data.map((t) => t.id)).toEqual([ids.agent]);
    const clean = await client.traces.list({ errors: false });
    expect(clean.data.map((t) => t.id)).toEqual([ids.plain]);

    const trace = await client.traces.get(ids.agent);
    expect(trace).toMatchObject({ id: ids.agent, name: 'invoke_agent planner', totals: { span_count: 3 } });
    const names = trace.spans.map((s) => `${s.depth}:${s.name}`);
    expect(names[0]).toBe('0:invoke_agent planner');
    expect(names.slice(1).sort()).toEqual(['1:chat gpt-4o-mini', '1:execute_tool search']);
    const chat = trace.spans.find((s) => s.name === 'chat gpt-4o-mini')!;
    expect(chat.model_call).toMatchObject({
      model: 'gpt-4o-mini',
      usage: { input_tokens: 40, output_tokens: 10 },
    });
    expect(chat.model_call?.task_log_id).toMatch(/^log_/);
  });

  it('answers typed errors: an unknown trace, a bad filter, another project', async () => {
    await expect(client.traces.get('0af7651916cd43dd8448eb211c80319c')).rejects.toBeInstanceOf(NotFoundError);
    await expect(client.traces.list({ since: 'yesterday' })).rejects.toBeInstanceOf(UnprocessableEntityError);
    const other = await h.key(['*'], 'other-project');
    const stranger = clientOf(h, { apiKey: other.key });
    await expect(stranger.traces.get(ids.agent)).rejects.toBeInstanceOf(NotFoundError);
    expect((await stranger.traces.list()).data).toEqual([]);
  });
});

describe('evalgate traces', () => {
  it('lists traces as a table and as JSON', async () => {
    const res = await evalgate(h, ['traces', 'list', '--errors', 'only']);
    expect(res.code, res.stderr).toBe(0);
    expect(res.stdout).toContain(ids.agent);
    expect(res.stdout).toContain('invoke_agent planner');
    expect(res.stdout).not.toContain(ids.plain);
    expect(res.stdout).toContain('1 of 1 traces');
    const json = await evalgateJson(h, ['traces', 'list', '--model', 'gpt-4o-mini']);
    expect(json.map((t: { id: string }) => t.id)).toEqual([ids.agent]);
  });

  it('shows a trace as its totals and an indented span tree', async () => {
    const res = await evalgate(h, ['traces', 'get', ids.agent]);
    expect(res.code, res.stderr).toBe(0);
    expect(res.stdout).toContain('invoke_agent planner');
    expect(res.stdout).toContain('  chat gpt-4o-mini');
    expect(res.stdout).toContain('error: timeout');
    expect(res.stdout).toMatch(/40\/10/);
    const json = await evalgateJson(h, ['traces', 'get', ids.agent]);
    expect(json.spans).toHaveLength(3);
  });

  it('fails clearly on an unknown trace and a bad --errors value', async () => {
    const missing = await evalgate(h, ['traces', 'get', '0af7651916cd43dd8448eb211c80319c']);
    expect(missing.code).toBe(1);
    expect(missing.stderr).toMatch(/404|not found/i);
    const bad = await evalgate(h, ['traces', 'list', '--errors', 'maybe']);
    expect(bad.code).toBe(1);
    expect(bad.stderr).toContain("--errors must be 'only' or 'none'");
  });
});
