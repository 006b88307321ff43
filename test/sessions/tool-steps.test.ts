import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { MockRequest } from '../fixtures/mock-upstream.js';
import { type Gateway, startGateway } from '../gateway/gateway-helpers.js';
import { hasBwrap } from '../helpers/sandbox.js';
import { waitFor } from '../helpers/wait.js';
import { agentReply, time, weather } from './agent-mock.js';

/**
 * A single tool step (one tool call of a session) scored and annotated. Two agent sessions, each
 * get_weather({city}) in turn 0, get_time({city}) in turn 1, then an answer: a `tool_steps` run makes one
 * position per call (filtered by session and tool), judges read the step and the conversation before it,
 * code evaluators `sample["tool_step"]`; the scores show on the session; a step is queued for review by
 * session and tool call id, shown to the reviewer and exported.
 */
let g: Gateway;
const MODEL = 'openai/gpt-4o-mini';
const judgePrompts: string[] = [];
let paris: string;
let lima: string;
/** Evaluator name → id (samples name their evaluator by id). */
const ids = new Map<string, string>();
/** Tool call ids by `<city>/<tool>`. */
const calls = new Map<string, string>();

function reply(req: MockRequest) {
  if (req.body?.response_format || req.body?.tool_choice) {
    judgePrompts.push(String(req.body.messages.at(-1)?.content ?? ''));
    return { json: { score: 1, reasoning: 'a sound call' } };
  }
  return agentReply(req);
}

const tools: OpenAI.ChatCompletionTool[] = ['get_weather', 'get_time'].map((name) => ({
  type: 'function',
  function: { name, parameters: { type: 'object', properties: { city: { type: 'string' } } } },
}));

async function toolLoop(client: OpenAI, question: string): Promise<void> {
  const messages: OpenAI.ChatCompletionMessageParam[] = [{ role: 'user', content: question }];
  for (let i = 0; i < 5; i++) {
    const res = await client.chat.completions.create({ model: MODEL, messages, tools });
    const message = res.choices[0]!.message;
    messages.push(message);
    if (!message.tool_calls?.length) return;
    for (const call of message.tool_calls) {
      if (call.type !== 'function') continue;
      const { city } = JSON.parse(call.function.arguments) as { city: string };
      const content = call.function.name === 'get_weather' ? weather(city) : time(city);
      messages.push({ role: 'tool', tool_call_id: call.id, content });
    }
  }
}

beforeAll(async () => {
  g = await startGateway({
    EVALGATE_PIP_FIND_LINKS: mkdtempSync(path.join(tmpdir(), 'evalgate-wheels-')),
    ...(hasBwrap ? {} : { EVALGATE_UNSAFE_CODE_EVALUATORS: '1' }),
  });
  g.mock.set({ reply });
  expect((await g.h.call('POST', '/v1/containers', { body: { label: 'agents' } })).status).toBe(201);
  const container = { 'x-evalgate-container': 'agents' };
  await toolLoop(g.client({ headers: { ...container, 'x-evalgate-session': 'paris' } }), 'Weather in Paris?');
  await toolLoop(g.client({ headers: { ...container, 'x-evalgate-session': 'lima' } }), 'Weather in Lima?');
  await g.h.app.services.logWriter.flush();
  const sessions = (await g.h.call('GET', '/v1/sessions?container=agents')).body.data as any[];
  paris = sessions.find((s) => s.key === 'paris').id;
  lima = sessions.find((s) => s.key === 'lima').id;
  for (const [city, id] of [
    ['paris', paris],
    ['lima', lima],
  ] as const) {
    const detail = (await g.h.call('GET', `/v1/sessions/${id}`)).body;
    for (const c of detail.tool_calls) calls.set(`${city}/${c.name}`, c.id);
  }
  expect(calls.size).toBe(4);
  const create = async (body: Record<string, unknown>) => {
    const res = await g.h.call('POST', '/v1/evaluators', { body });
    expect(res.status, res.text).toBe(201);
    ids.set(res.body.name, res.body.id);
  };
  await create({
    type: 'judge',
    name: 'step-judge',
    model: MODEL,
    prompt:
      'TOOL {{tool_step.name}} ARGS {{tool_step.arguments}} RESULT {{tool_step.result}}\nBEFORE:\n{{conversation}}',
  });
  await create({
    type: 'code',
    name: 'step-code',
    source:
      'def evaluate(sample, ground_truth, baseline):\n' +
      '    s = sample["tool_step"]\n' +
      '    ok = [c["name"] for c in sample["tool_calls"]] == [s["name"]] and s["result"].endswith(s["arguments"]["city"])\n' +
      '    return {"score": s["turn"], "passed": ok and ground_truth is None}\n',
  });
  await create({
    type: 'judge',
    name: 'step-ok',
    model: MODEL,
    prompt: 'Is {{output}} right?',
    scale: { type: 'pass_fail' },
  });
}, 120_000);
afterAll(async () => {
  await g?.close();
});

async function runToEnd(body: Record<string, unknown>) {
  const created = await g.h.call('POST', '/v1/evaluation/runs', { body: { container: 'agents', ...body } });
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
  const samples = (await g.h.call('GET', `/v1/evaluation/runs/${id}/samples?limit=100`)).body.data;
  return { run, samples: samples as any[] };
}

describe('a tool step scored by evaluators', () => {
  let runId: string;

  it('makes one position per tool call; judges read the step and what came before it, code gets tool_step', async () => {
    judgePrompts.length = 0;
    const { run, samples } = await runToEnd({
      evaluators: ['step-judge', 'step-code'],
      sample: { type: 'tool_steps', container: 'agents' },
    });
    runId = run.id;
    expect(run.status, JSON.stringify(run.error)).toBe('completed');
    expect(run.sample.type).toBe('tool_steps');
    // Sessions oldest first (Paris, then Lima), each session's calls in order.
    const items = [
      `${paris}#${calls.get('paris/get_weather')}`,
      `${paris}#${calls.get('paris/get_time')}`,
      `${lima}#${calls.get('lima/get_weather')}`,
      `${lima}#${calls.get('lima/get_time')}`,
    ];
    expect(samples).toHaveLength(8);
    for (const [position, id] of items.entries()) {
      const at = samples.filter((s) => s.position === position);
      expect(at.map((s) => s.item_id)).toEqual([id, id]);
      for (const s of at) expect(s.status, JSON.stringify(s.error)).toBe('scored');
      expect(at.find((s) => s.evaluator_id === ids.get('step-code'))).toMatchObject({
        score: position % 2,
        passed: true,
      });
      expect(at.find((s) => s.evaluator_id === ids.get('step-judge'))).toMatchObject({ score: 1 });
    }
    expect(judgePrompts).toHaveLength(4);
    const parisTime = judgePrompts.find((p) => p.includes('TOOL get_time') && p.includes('Paris'));
    expect(parisTime).toContain('ARGS {"city":"Paris"} RESULT 12:00 in Paris');
    // The conversation before the call: the question, the first call and its result; not the step itself.
    // (The judge's prompt names no {{output}}: the step's input and output follow the template.)
    const before = parisTime!.split('BEFORE:\n')[1]!.split('\n\nInput:')[0]!;
    expect(before).toContain('user: Weather in Paris?');
    expect(before).toContain('tool result: Sunny in Paris');
    expect(before).not.toContain('get_time');
    expect(before).not.toContain('12:00');
  }, 120_000);

  it('picks steps by session and tool', async () => {
    const { run, samples } = await runToEnd({
      evaluators: ['step-code'],
      sample: { type: 'tool_steps', container: 'agents', filter: { sessions: [lima], tools: ['get_time'] } },
    });
    expect(run.status, JSON.stringify(run.error)).toBe('completed');
    expect(samples.map((s) => [s.item_id, s.score, s.passed])).toEqual([
      [`${lima}#${calls.get('lima/get_time')}`, 1, true],
    ]);
  }, 120_000);

  it('shows a step’s scores on the session and on the step', async () => {
    const detail = (await g.h.call('GET', `/v1/sessions/${paris}`)).body;
    const weatherCall = detail.tool_calls.find((c: any) => c.name === 'get_weather');
    expect(weatherCall.scores.filter((s: any) => s.run_id === runId)).toHaveLength(2);
    const step = await g.h.call('GET', `/v1/sessions/${paris}/tool-calls/${calls.get('paris/get_time')}`);
    expect(step.status, step.text).toBe(200);
    expect(step.body).toMatchObject({
      object: 'tool_step',
      id: `${paris}#${calls.get('paris/get_time')}`,
      name: 'get_time',
      arguments: { city: 'Paris' },
      result: '12:00 in Paris',
      turn: 1,
      index: 1,
    });
    expect(step.body.context.map((m: any) => m.role)).toEqual(['user', 'assistant', 'tool']);
    expect(step.body.scores.filter((s: any) => s.run_id === runId)).toHaveLength(2);
  });

  it('answers 404 for an unknown session or tool call and for another project’s key, 422 for bad filters', async () => {
    const call = calls.get('paris/get_time')!;
    const other = await g.h.key(['*'], 'elsewhere');
    for (const [path, key] of [
      [`/v1/sessions/sess_missing/tool-calls/${call}`, undefined],
      [`/v1/sessions/${paris}/tool-calls/call_missing`, undefined],
      [`/v1/sessions/${lima}/tool-calls/${call}`, undefined],
      [`/v1/sessions/${paris}/tool-calls/${call}`, other.key],
    ] as const) {
      const res = await g.h.call('GET', path, key ? { key } : {});
      expect(res.status, path).toBe(404);
      expect(res.body.error.code).toBe('not_found');
    }
    const bad = async (sample: Record<string, unknown>) => {
      const res = await g.h.call('POST', '/v1/evaluation/runs', {
        body: { container: 'agents', evaluators: ['step-code'], sample },
      });
      expect(res.status, JSON.stringify(sample)).toBe(422);
      return res.body.detail as { loc: unknown[]; msg: string }[];
    };
    const empty = await bad({ type: 'tool_steps', container: 'agents', filter: { tools: [] } });
    expect(empty[0]!.loc).toEqual(['body', 'sample', 'filter', 'tools']);
    const onSessions = await bad({ type: 'sessions', container: 'agents', filter: { tools: ['get_time'] } });
    expect(onSessions[0]).toMatchObject({
      loc: ['body', 'sample', 'filter', 'tools'],
      msg: "'tools' filters tool steps, not sessions",
    });
    const onTraces = await bad({ type: 'traces', container: 'agents', filter: { sessions: [paris] } });
    expect(onTraces[0]!.loc).toEqual(['body', 'sample', 'filter', 'sessions']);
    const missing = await g.h.call('POST', '/v1/evaluation/runs', {
      body: {
        container: 'agents',
        evaluators: ['step-code'],
        sample: { type: 'tool_steps', container: 'nope' },
      },
    });
    expect(missing.status).toBe(404);
  });
});

describe('a tool step annotated by a reviewer', () => {
  it('is queued by session and tool call id, shown with its context, and exported', async () => {
    const q = await g.h.call('POST', '/v1/annotation-queues', {
      body: { name: 'steps', evaluators: ['step-ok'] },
    });
    expect(q.status, q.text).toBe(201);
    const step = { session: paris, tool_call_id: calls.get('paris/get_weather')! };
    const added = await g.h.call('POST', '/v1/annotation-queues/steps/items', {
      body: { tool_steps: [step, step] },
    });
    expect(added.status, added.text).toBe(200);
    expect(added.body).toMatchObject({ added: 1, already_queued: 0 });
    const again = await g.h.call('POST', '/v1/annotation-queues/steps/items', {
      body: { tool_steps: [step] },
    });
    expect(again.body).toMatchObject({ added: 0, already_queued: 1 });
    const items = (await g.h.call('GET', '/v1/annotation-queues/steps/items')).body.data;
    expect(items).toHaveLength(1);
    expect(items[0]).toMatchObject({ kind: 'tool_step', ref: `${paris}#${step.tool_call_id}` });

    const claim = await g.h.call('POST', '/v1/annotation-queues/steps/claim');
    expect(claim.status, claim.text).toBe(200);
    expect(claim.body.item.content).toMatchObject({
      input: { tool: 'get_weather', arguments: { city: 'Paris' } },
      output: 'Sunny in Paris',
      error: null,
      metadata: { session_id: paris, tool_call_id: step.tool_call_id, tool_name: 'get_weather', turn: 0 },
    });
    expect(claim.body.item.content.metadata.context).toEqual([
      { role: 'user', content: 'Weather in Paris?' },
    ]);
    const review = await g.h.call('POST', `/v1/annotation-queues/steps/items/${items[0].id}/review`, {
      body: { scores: [{ evaluator: 'step-ok', passed: true }] },
    });
    expect(review.status, review.text).toBe(201);
    const exported = await g.h.call('POST', '/v1/annotation-queues/steps/export', {
      body: { evaluator: 'step-ok', label: 'reviewed-steps' },
    });
    expect(exported.status, exported.text).toBe(201);
    const rows = (await g.h.call('GET', '/v1/datasets/reviewed-steps/items')).body.data;
    expect(rows).toHaveLength(1);
    expect(rows[0].data).toMatchObject({
      input: { tool: 'get_weather', arguments: { city: 'Paris' } },
      output: 'Sunny in Paris',
      expected: true,
      metadata: { session_id: paris, tool_call_id: step.tool_call_id },
    });
  });

  it('refuses an unknown session or tool call (422 at its place) and another project’s key (404)', async () => {
    const add = (tool_steps: unknown, key?: string) =>
      g.h.call('POST', '/v1/annotation-queues/steps/items', {
        body: { tool_steps },
        ...(key ? { key } : {}),
      });
    const unknownSession = await add([{ session: 'sess_missing', tool_call_id: 'call_1' }]);
    expect(unknownSession.status).toBe(422);
    expect(unknownSession.body.detail).toEqual([
      {
        loc: ['body', 'tool_steps', 0, 'session'],
        msg: "Session 'sess_missing' not found in this project",
        type: 'not_found',
      },
    ]);
    const unknownCall = await add([
      { session: lima, tool_call_id: calls.get('lima/get_time') },
      { session: paris, tool_call_id: 'call_missing' },
    ]);
    expect(unknownCall.status).toBe(422);
    expect(unknownCall.body.detail).toEqual([
      {
        loc: ['body', 'tool_steps', 1, 'tool_call_id'],
        msg: `Session '${paris}' has no tool call 'call_missing'`,
        type: 'not_found',
      },
    ]);
    expect((await add([{ session: paris }])).status).toBe(422);
    const other = await g.h.key(['*'], 'elsewhere-2');
    const foreign = await add([{ session: paris, tool_call_id: calls.get('paris/get_time') }], other.key);
    expect(foreign.status).toBe(404);
    expect(foreign.body.error.code).toBe('not_found');
    // Another project's own queue does not find this project's session either.
    const ev = await g.h.call('POST', '/v1/evaluators', {
      body: { type: 'trajectory_length', name: 'their-length', max_length: 3 },
      key: other.key,
    });
    expect(ev.status, ev.text).toBe(201);
    const q = await g.h.call('POST', '/v1/annotation-queues', {
      body: { name: 'theirs', evaluators: ['their-length'] },
      key: other.key,
    });
    expect(q.status, q.text).toBe(201);
    const theirs = await g.h.call('POST', '/v1/annotation-queues/theirs/items', {
      body: { tool_steps: [{ session: paris, tool_call_id: calls.get('paris/get_time') }] },
      key: other.key,
    });
    expect(theirs.status).toBe(422);
    expect(theirs.body.detail[0].msg).toBe(`Session '${paris}' not found in this project`);
    // Nothing was added by the refused requests.
    expect((await g.h.call('GET', '/v1/annotation-queues/steps/items')).body.data).toHaveLength(1);
  });
});
