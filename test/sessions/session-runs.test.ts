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

/** Sessions as a run source: one position per session, the conversation handed to the evaluators. */
let g: Gateway;
const MODEL = 'openai/gpt-4o-mini';
const judgePrompts: string[] = [];

function reply(req: MockRequest) {
  if (req.body?.response_format || req.body?.tool_choice) {
    const prompt = JSON.stringify(req.body.messages);
    judgePrompts.push(prompt);
    return { json: { score: prompt.includes('get_time') ? 1 : 0, reasoning: 'saw the conversation' } };
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
    // Without bubblewrap on the machine, code runs unsandboxed: this test is about what it is given.
    ...(hasBwrap ? {} : { EVALGATE_UNSAFE_CODE_EVALUATORS: '1' }),
  });
  g.mock.set({ reply });
  expect((await g.h.call('POST', '/v1/containers', { body: { label: 'agents' } })).status).toBe(201);
  const client = g.client({ headers: { 'x-evalgate-container': 'agents' } });
  await toolLoop(client, 'Weather in Paris?');
  await toolLoop(client, 'Weather in Lima?');
  const judge = await g.h.call('POST', '/v1/evaluators', {
    body: {
      type: 'judge',
      name: 'goal',
      model: MODEL,
      prompt:
        'Did the agent reach the goal?\nCONVERSATION:\n{{conversation}}\nTOOLS:\n{{trajectory}}\nFINAL: {{final_output}}',
    },
  });
  expect(judge.status, judge.text).toBe(201);
  const code = await g.h.call('POST', '/v1/evaluators', {
    body: {
      type: 'code',
      name: 'tool-count',
      source:
        'def evaluate(sample, ground_truth, baseline):\n' +
        '    names = [c["name"] for c in sample["tool_calls"]]\n' +
        '    return {"score": len(sample["turns"]), "passed": names == ["get_weather", "get_time"]}\n',
    },
  });
  expect(code.status, code.text).toBe(201);
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
  const samples = (await g.h.call('GET', `/v1/evaluation/runs/${id}/samples?limit=50`)).body.data;
  return { run, samples };
}

describe('sessions as a run source', () => {
  it('a judge over {{conversation}} scores each session once, seeing the turns and tool calls', async () => {
    judgePrompts.length = 0;
    const { run, samples } = await runToEnd({
      evaluators: ['goal'],
      sample: { type: 'sessions', container: 'agents', range: '0:10' },
      // The same sessions as ground truth: no reference (an omitted side would be the container's task logs).
      ground_truth: { type: 'sessions', container: 'agents', range: '0:10' },
    });
    expect(run.status).toBe('completed');
    expect(run.sample).toMatchObject({ type: 'sessions', range: '0:10' });
    expect(samples).toHaveLength(2);
    expect(samples.every((s: any) => s.score === 1)).toBe(true);
    expect(judgePrompts).toHaveLength(2);
    for (const city of ['Paris', 'Lima']) {
      const prompt = judgePrompts.find((p) => p.includes(`user: Weather in ${city}?`));
      expect(prompt, city).toBeDefined();
      expect(prompt).toContain(`tool result: ${weather(city)}`);
      expect(prompt).toContain(`FINAL: In ${city} it is sunny and noon.`);
    }
    const sessions = (await g.h.call('GET', '/v1/sessions?container=agents')).body.data;
    const detail = await g.h.call('GET', `/v1/sessions/${sessions[0].id}`);
    expect(detail.body.scores).toEqual([expect.objectContaining({ run_id: run.id, score: 1 })]);
  });

  it('code evaluators get sample["turns"] and sample["tool_calls"]', async () => {
    const { run, samples } = await runToEnd({
      evaluators: ['tool-count'],
      sample: { type: 'sessions', container: 'agents', filter: { min_turns: 3 } },
      ground_truth: { type: 'sessions', container: 'agents', filter: { min_turns: 3 } },
    });
    expect(run.status, JSON.stringify(run.error)).toBe('completed');
    expect(samples.map((s: any) => [s.score, s.passed])).toEqual([
      [3, true],
      [3, true],
    ]);
  });

  it('refuses a filter on other kinds, a bad filter, an unknown container', async () => {
    const bad = async (sample: Record<string, unknown>) =>
      g.h.call('POST', '/v1/evaluation/runs', {
        body: { container: 'agents', evaluators: ['goal'], sample },
      });
    expect((await bad({ type: 'container', container: 'agents', filter: {} })).status).toBe(422);
    expect((await bad({ type: 'sessions', container: 'agents', filter: { min_turns: -1 } })).status).toBe(
      422,
    );
    expect((await bad({ type: 'sessions', container: 'agents', filter: { nope: 1 } })).status).toBe(422);
    expect((await bad({ type: 'sessions' })).status).toBe(422);
    const missing = await bad({ type: 'sessions', container: 'nowhere' });
    expect(missing.status).toBe(404);
    const other = await g.h.key(['*'], 'elsewhere');
    const theirs = await g.h.call('POST', '/v1/evaluation/runs', {
      key: other.key,
      body: { container: 'agents', evaluators: ['goal'], sample: { type: 'sessions', container: 'agents' } },
    });
    expect(theirs.status).toBe(404);
  });
});
