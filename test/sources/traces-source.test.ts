import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { SpanKind } from '@opentelemetry/api';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { MockRequest } from '../fixtures/mock-upstream.js';
import { type Gateway, startGateway } from '../gateway/gateway-helpers.js';
import { hasBwrap } from '../helpers/sandbox.js';
import { waitFor } from '../helpers/wait.js';
import { sdkProvider, settled } from '../traces/helpers.js';

/**
 * Traces as a run source: each position is one trace of the container (sent over OTLP by the official
 * SDK), its model calls read as one conversation and its tool executions as the trajectory.
 */
let g: Gateway;
const MODEL = 'openai/gpt-4o-mini';
const judgePrompts: string[] = [];

function reply(req: MockRequest) {
  const messages = (req.body?.messages ?? []) as { content?: unknown }[];
  const prompt = messages.map((m) => String(m.content ?? '')).join('\n');
  judgePrompts.push(prompt);
  return { json: { score: prompt.includes('lookup_user') ? 1 : 0, reasoning: 'read the trace' } };
}

const text = (role: string, content: string) => ({ role, parts: [{ type: 'text', content }] });

/** One agent trace: a model call asking for the weather tool, the tool, an extra lookup, the answer. */
async function agentTrace(city: string): Promise<string> {
  const provider = sdkProvider(g.h, { protocol: 'json', resource: { 'evalgate.container': 'apps' } });
  const tracer = provider.getTracer('agent-app');
  const call = { type: 'tool_call', id: `call_${city}`, name: 'get_weather', arguments: { city } };
  const result = { type: 'tool_call_response', id: `call_${city}`, response: `sunny in ${city}` };
  let traceId = '';
  await tracer.startActiveSpan('invoke_agent weather', async (agent) => {
    traceId = agent.spanContext().traceId;
    agent.setAttribute('gen_ai.operation.name', 'invoke_agent');
    const chat = (input: unknown[], output: unknown[]) => {
      const span = tracer.startSpan('chat gpt-4o-mini', { kind: SpanKind.CLIENT });
      span.setAttributes({
        'gen_ai.operation.name': 'chat',
        'gen_ai.provider.name': 'openai',
        'gen_ai.request.model': 'gpt-4o-mini',
        'gen_ai.usage.input_tokens': 10,
        'gen_ai.usage.output_tokens': 5,
        'gen_ai.input.messages': JSON.stringify(input),
        'gen_ai.output.messages': JSON.stringify(output),
      });
      span.end();
    };
    const question = text('user', `Weather in ${city}?`);
    chat([question], [{ role: 'assistant', parts: [call] }]);
    const tool = tracer.startSpan('execute_tool get_weather');
    tool.setAttributes({
      'gen_ai.operation.name': 'execute_tool',
      'gen_ai.tool.name': 'get_weather',
      'gen_ai.tool.call.id': `call_${city}`,
    });
    tool.end();
    // A tool the model calls never show: only its span tells of it.
    const lookup = tracer.startSpan('execute_tool lookup_user');
    lookup.setAttributes({
      'gen_ai.operation.name': 'execute_tool',
      'gen_ai.tool.name': 'lookup_user',
      'gen_ai.tool.call.id': `lookup_${city}`,
      'gen_ai.tool.call.arguments': JSON.stringify({ user: 'u1' }),
      'gen_ai.tool.call.result': 'premium',
    });
    lookup.end();
    chat(
      [question, { role: 'assistant', parts: [call] }, { role: 'tool', parts: [result] }],
      [text('assistant', `It is sunny in ${city}.`)],
    );
    agent.end();
  });
  await provider.forceFlush();
  await provider.shutdown();
  return traceId;
}

const traceIds: string[] = [];

beforeAll(async () => {
  g = await startGateway({
    EVALGATE_PIP_FIND_LINKS: mkdtempSync(path.join(tmpdir(), 'evalgate-wheels-')),
    ...(hasBwrap ? {} : { EVALGATE_UNSAFE_CODE_EVALUATORS: '1' }),
  });
  g.mock.set({ reply });
  expect((await g.h.call('POST', '/v1/containers', { body: { label: 'apps' } })).status).toBe(201);
  traceIds.push(await agentTrace('Paris'));
  traceIds.push(await agentTrace('Lima'));
  await settled(g.h);
  const judge = await g.h.call('POST', '/v1/evaluators', {
    body: {
      type: 'judge',
      name: 'trace-goal',
      model: MODEL,
      prompt:
        'Goal reached?\nCONVERSATION:\n{{conversation}}\nTOOLS:\n{{trajectory}}\nFINAL: {{final_output}}',
    },
  });
  expect(judge.status, judge.text).toBe(201);
  const code = await g.h.call('POST', '/v1/evaluators', {
    body: {
      type: 'code',
      name: 'trace-tools',
      source:
        'def evaluate(sample, ground_truth, baseline):\n' +
        '    names = [c["name"] for c in sample["tool_calls"]]\n' +
        '    return {"score": len(sample["turns"]), "passed": names == ["get_weather", "lookup_user"]}\n',
    },
  });
  expect(code.status, code.text).toBe(201);
}, 120_000);
afterAll(async () => {
  await g?.close();
});

async function runToEnd(body: Record<string, unknown>, key?: string) {
  const created = await g.h.call('POST', '/v1/evaluation/runs', {
    body: { container: 'apps', ...body },
    key,
  });
  expect(created.status, created.text).toBe(201);
  const id = created.body.id as string;
  await waitFor(
    async () =>
      ['completed', 'error', 'cancelled'].includes(
        (await g.h.call('GET', `/v1/evaluation/runs/${id}`)).body.status,
      ),
    90_000,
  );
  const run = (await g.h.call('GET', `/v1/evaluation/runs/${id}`)).body;
  const samples = (await g.h.call('GET', `/v1/evaluation/runs/${id}/samples?limit=50`)).body.data;
  return { run, samples };
}

const side = (extra: Record<string, unknown> = {}) => ({ type: 'traces', container: 'apps', ...extra });

describe('traces as a run source', () => {
  it('a judge sees each trace once: its conversation, its tool calls (spans included), its answer', async () => {
    judgePrompts.length = 0;
    const { run, samples } = await runToEnd({
      evaluators: ['trace-goal'],
      sample: side(),
      ground_truth: side(),
    });
    expect(run.status, JSON.stringify(run.error)).toBe('completed');
    expect(run.sample).toMatchObject({ type: 'traces', range: '0:100' });
    expect(samples.map((s: any) => s.item_id).sort()).toEqual([...traceIds].sort());
    expect(samples.every((s: any) => s.score === 1)).toBe(true);
    expect(judgePrompts).toHaveLength(2);
    for (const city of ['Paris', 'Lima']) {
      const prompt = judgePrompts.find((p) => p.includes(`user: Weather in ${city}?`));
      expect(prompt, city).toBeDefined();
      expect(prompt).toContain(`1. get_weather({"city":"${city}"}) -> sunny in ${city}`);
      expect(prompt).toContain('2. lookup_user({"user":"u1"}) -> premium');
      expect(prompt).toContain(`FINAL: It is sunny in ${city}.`);
    }
  });

  it('code evaluators get the turns and the tool calls; filters narrow the traces', async () => {
    const { run, samples } = await runToEnd({
      evaluators: ['trace-tools'],
      sample: side({ filter: { model: 'gpt-4o-mini', errors: false } }),
      ground_truth: side({ filter: { model: 'gpt-4o-mini', errors: false } }),
    });
    expect(run.status, JSON.stringify(run.error)).toBe('completed');
    expect(samples.map((s: any) => [s.score, s.passed])).toEqual([
      [2, true],
      [2, true],
    ]);
    const none = await runToEnd({
      evaluators: ['trace-tools'],
      sample: side({ filter: { model: 'other-model' } }),
      ground_truth: side({ filter: { model: 'other-model' } }),
    });
    expect(none.samples).toHaveLength(0);
  });

  it('refuses session-only filters, a missing container, an unknown one and another project', async () => {
    const create = (sample: Record<string, unknown>, key?: string) =>
      g.h.call('POST', '/v1/evaluation/runs', {
        body: { container: 'apps', evaluators: ['trace-goal'], sample },
        key,
      });
    const turns = await create(side({ filter: { min_turns: 2 } }));
    expect(turns.status).toBe(422);
    expect(JSON.stringify(turns.body)).toContain('min_turns');
    expect((await create({ type: 'traces' })).status).toBe(422);
    const missing = await create({ type: 'traces', container: 'nowhere' });
    expect(missing.status).toBe(404);
    const other = await g.h.key(['*'], 'elsewhere');
    const foreign = await g.h.call('POST', '/v1/evaluation/runs', {
      body: { container: 'apps', evaluators: ['trace-goal'], sample: side() },
      key: other.key,
    });
    expect(foreign.status, foreign.text).toBe(404);
  });
});
