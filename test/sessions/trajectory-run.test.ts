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
 * A session run scored against a dataset of expected trajectories (its ground-truth side: each row names
 * the session it expects, by key or by id, in any order). Every number below is worked by hand from
 * what the scripted agent does in each session: get_weather({city}) in turn 0, get_time({city}) in turn 1,
 * then a text answer in turn 2.
 */
let g: Gateway;
const MODEL = 'openai/gpt-4o-mini';
const judgePrompts: string[] = [];

function reply(req: MockRequest) {
  if (req.body?.response_format || req.body?.tool_choice) {
    judgePrompts.push(JSON.stringify(req.body.messages));
    return { json: { score: 1, reasoning: 'the goal was reached' } };
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

const call = (name: string, args: Record<string, unknown>) => ({ name, arguments: args });
const W = (city: string) => call('get_weather', { city });
const T = (city: string) => call('get_time', { city });

/**
 * Paris's row (named by the session's key) expects its calls the other way round plus a search; Lima's
 * (named by the session's id: its session has no key) expects its weather only. The rows are not in the
 * sessions' order, and a row naming a session the run does not read adds no position.
 */
function expectedRows(limaSession: string) {
  return [
    { input: 'Somewhere else?', expected_tool_calls: [W('Oslo')], metadata: { session_key: 'case-oslo' } },
    {
      input: 'Weather in Lima?',
      expected_tool_calls: [W('Lima')],
      metadata: { session_id: limaSession },
    },
    {
      input: 'Weather in Paris?',
      expected_tool_calls: [T('Paris'), W('Paris'), call('search', { q: 'x' })],
      metadata: { session_key: 'case-paris' },
    },
  ];
}

/**
 * Hand-computed, per mode: [precision, recall, pass] of session 0 (actual [W, T] vs expected [T, W, S])
 * and session 1 (actual [W, T] vs expected [W]). Ordered modes pair calls in order (at most one of W, T
 * for session 0); unordered ones pair any.
 */
const BY_MODE = {
  exact: [
    [1 / 2, 1 / 3, false],
    [1 / 2, 1, false],
  ],
  in_order: [
    [1 / 2, 1 / 3, false],
    [1 / 2, 1, true],
  ],
  any_order: [
    [1, 2 / 3, false],
    [1 / 2, 1, false],
  ],
  subset: [
    [1, 2 / 3, true],
    [1 / 2, 1, false],
  ],
  superset: [
    [1, 2 / 3, false],
    [1 / 2, 1, true],
  ],
} as const;

const round = (n: number) => Math.round(n * 1e6) / 1e6;
/** Evaluator name → id (samples name their evaluator by id). */
const ids = new Map<string, string>();

beforeAll(async () => {
  g = await startGateway({
    EVALGATE_PIP_FIND_LINKS: mkdtempSync(path.join(tmpdir(), 'evalgate-wheels-')),
    ...(hasBwrap ? {} : { EVALGATE_UNSAFE_CODE_EVALUATORS: '1' }),
  });
  g.mock.set({ reply });
  expect((await g.h.call('POST', '/v1/containers', { body: { label: 'agents' } })).status).toBe(201);
  const container = { 'x-evalgate-container': 'agents' };
  // Paris's session is named by its key (the header); Lima's is found by continuity and has none.
  await toolLoop(
    g.client({ headers: { ...container, 'x-evalgate-session': 'case-paris' } }),
    'Weather in Paris?',
  );
  await toolLoop(g.client({ headers: container }), 'Weather in Lima?');
  await g.h.app.services.logWriter.flush();
  const sessions = (await g.h.call('GET', '/v1/sessions?container=agents')).body.data as any[];
  expect(sessions.map((x) => x.key).sort()).toEqual(['case-paris', null]);
  const lima = sessions.find((x) => x.key === null).id as string;
  const ds = await g.h.call('POST', '/v1/datasets', {
    body: { label: 'trajectories', items: expectedRows(lima) },
  });
  expect(ds.status, ds.text).toBe(201);
  const create = async (body: Record<string, unknown>) => {
    const res = await g.h.call('POST', '/v1/evaluators', { body });
    expect(res.status, res.text).toBe(201);
    ids.set(res.body.name, res.body.id);
    return res.body;
  };
  for (const mode of Object.keys(BY_MODE))
    await create({ type: 'tool_call_match', name: `tcm-${mode}`, match_mode: mode });
  await create({
    type: 'tool_call_match',
    name: 'tcm-schema',
    match_mode: 'superset',
    arguments_match: 'schema',
    tool_schemas: {
      get_weather: { type: 'object', required: ['city'], properties: { city: { const: 'Paris' } } },
    },
  });
  await create({ type: 'trajectory_length', name: 'len-turns', length_of: 'turns', max_length: 2 });
  await create({ type: 'trajectory_length', name: 'len-calls', min_length: 2, max_length: 2 });
  await create({
    type: 'judge',
    name: 'goal',
    model: MODEL,
    prompt: 'Did the agent reach the goal?\n{{conversation}}\nTOOLS:\n{{trajectory}}',
  });
  await create({
    type: 'code',
    name: 'no-truth',
    source:
      'def evaluate(sample, ground_truth, baseline):\n' +
      '    return {"score": 1 if ground_truth is None else 0, "passed": ground_truth is None}\n',
  });
  await create({
    type: 'code',
    name: 'turns-seen',
    source:
      'def evaluate(sample, ground_truth, baseline):\n' +
      '    calls = [c["name"] + "@" + str(c["turn"]) for c in sample["tool_calls"]]\n' +
      '    return {"score": len(sample["turns"]), "passed": calls == ["get_weather@0", "get_time@1"]}\n',
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

const of = (samples: any[], evaluator: string, position: number) => {
  const s = samples.find((x) => x.evaluator_id === ids.get(evaluator) && x.position === position);
  expect(s, `${evaluator} at ${position}`).toBeDefined();
  return s;
};

describe('trajectory graders over a session run with expected trajectories', () => {
  it('tool_call_match scores each mode as worked by hand; the judge sees each session once; code sees the turns', async () => {
    judgePrompts.length = 0;
    const evaluators = [
      ...Object.keys(BY_MODE).map((m) => `tcm-${m}`),
      'tcm-schema',
      'len-turns',
      'len-calls',
      'goal',
      'turns-seen',
    ];
    const { run, samples } = await runToEnd({
      evaluators,
      sample: { type: 'sessions', container: 'agents' },
      ground_truth: { type: 'dataset', dataset: 'trajectories' },
    });
    expect(run.status, JSON.stringify(run.error)).toBe('completed');
    expect(samples).toHaveLength(evaluators.length * 2);

    for (const [mode, expected] of Object.entries(BY_MODE)) {
      expected.forEach(([precision, recall, pass], position) => {
        const s = of(samples, `tcm-${mode}`, position);
        expect(s.status, `${mode} ${position}`).toBe('scored');
        expect(s.extra, `${mode} ${position}`).toMatchObject({
          precision: round(precision),
          recall: round(recall),
          pass,
          actual: 2,
          expected: position === 0 ? 3 : 1,
        });
        expect(s.score).toBe(pass ? 1 : 0);
        expect(s.passed).toBe(pass);
      });
    }
    // Per turn: which calls of each turn were paired. any_order pairs both of session 0's calls;
    // in_order pairs session 1's get_weather (turn 0), not its get_time (turn 1).
    expect(of(samples, 'tcm-any_order', 0).extra.per_turn).toEqual([
      { turn: 0, tool_calls: 1, matched: 1 },
      { turn: 1, tool_calls: 1, matched: 1 },
    ]);
    expect(of(samples, 'tcm-in_order', 1).extra.per_turn).toEqual([
      { turn: 0, tool_calls: 1, matched: 1 },
      { turn: 1, tool_calls: 1, matched: 0 },
    ]);
    // Arguments by schema: Paris's weather satisfies {city: const Paris}; get_time's expected arguments
    // (no keyword a schema knows) accept any; Lima's weather does not.
    expect(of(samples, 'tcm-schema', 0).extra).toMatchObject({
      precision: 1,
      recall: round(2 / 3),
      pass: false,
    });
    expect(of(samples, 'tcm-schema', 1).extra).toMatchObject({ precision: 0, recall: 0, pass: false });
    // Three turns each (weather, time, answer), two tool calls each.
    for (const p of [0, 1]) {
      expect(of(samples, 'len-turns', p)).toMatchObject({ score: 0, passed: false, extra: { length: 3 } });
      expect(of(samples, 'len-calls', p)).toMatchObject({ score: 1, passed: true, extra: { length: 2 } });
      expect(of(samples, 'turns-seen', p)).toMatchObject({ score: 3, passed: true });
      expect(of(samples, 'goal', p)).toMatchObject({ score: 1 });
    }
    // The judge was asked once per session, never per call.
    expect(judgePrompts).toHaveLength(2);
    expect(judgePrompts.filter((p) => p.includes('user: Weather in Paris?'))).toHaveLength(1);
    expect(judgePrompts.filter((p) => p.includes('user: Weather in Lima?'))).toHaveLength(1);
  });

  it("pairs each session with the row naming it, whatever the rows' order or range", async () => {
    const { run, samples } = await runToEnd({
      evaluators: ['tcm-exact'],
      sample: { type: 'sessions', container: 'agents' },
      ground_truth: { type: 'dataset', dataset: 'trajectories', range: '1:3' },
    });
    expect(run.status, JSON.stringify(run.error)).toBe('completed');
    expect(run.metrics.positions).toBe(2);
    // Paris (position 0) still gets its own row, though the range starts past the Oslo row.
    const byPosition = [...samples].sort((x, y) => x.position - y.position);
    expect(byPosition.map((x) => [x.position, x.extra?.expected])).toEqual([
      [0, 3],
      [1, 1],
    ]);
  });

  it('an omitted ground truth on a sessions run adds no positions and gives evaluators none', async () => {
    // More task logs than sessions: an omitted side placed by position would add their positions.
    expect((await g.logs('agents')).length).toBeGreaterThan(2);
    const { run, samples } = await runToEnd({
      evaluators: ['no-truth', 'len-calls'],
      sample: { type: 'sessions', container: 'agents' },
    });
    expect(run.status, JSON.stringify(run.error)).toBe('completed');
    // Two sessions: two positions, not one per task log.
    expect(run.metrics.positions).toBe(2);
    expect(samples).toHaveLength(4);
    for (const p of [0, 1]) {
      expect(of(samples, 'no-truth', p)).toMatchObject({ status: 'scored', score: 1, passed: true });
      expect(of(samples, 'len-calls', p)).toMatchObject({ status: 'scored', passed: true });
    }
  });

  it("an omitted ground truth on a task-log run with a range is the sample's own logs: a code evaluator gets None", async () => {
    const { run, samples } = await runToEnd({
      evaluators: ['no-truth'],
      sample: { type: 'container', container: 'agents', range: '1:3' },
    });
    expect(run.status, JSON.stringify(run.error)).toBe('completed');
    expect(run.metrics.positions).toBe(2);
    const byPosition = [...samples].sort((x, y) => x.position - y.position);
    expect(byPosition.map((x) => [x.position, x.status, x.score])).toEqual([
      [0, 'scored', 1],
      [1, 'scored', 1],
    ]);
  });

  it('scores a dataset row that carries the conversation and its expected trajectory', async () => {
    const rows = [
      {
        input: 'Book a table',
        output: 'Booked.',
        turns: [
          { tool_calls: [call('find_table', { seats: 2, time: '19:00' })] },
          { tool_calls: [call('book', { id: 7 })] },
          {},
        ],
        expected_tool_calls: [call('find_table', { seats: 2 }), call('book', {})],
      },
      {
        input: 'Cancel',
        output: 'Done.',
        tool_calls: [call('book', { id: 1 }), call('cancel', { id: 1 })],
        expected_tool_calls: [call('cancel', { id: 1 })],
      },
    ];
    expect((await g.h.call('POST', '/v1/datasets', { body: { label: 'convos', items: rows } })).status).toBe(
      201,
    );
    const ev = await g.h.call('POST', '/v1/evaluators', {
      body: {
        type: 'tool_call_match',
        name: 'tcm-subset-args',
        match_mode: 'exact',
        arguments_match: 'subset',
      },
    });
    expect(ev.status, ev.text).toBe(201);
    ids.set('tcm-subset-args', ev.body.id);
    const { run, samples } = await runToEnd({
      evaluators: ['tcm-subset-args', 'len-turns'],
      sample: { type: 'dataset', dataset: 'convos' },
      ground_truth: { type: 'dataset', dataset: 'convos' },
    });
    expect(run.status, JSON.stringify(run.error)).toBe('completed');
    // Row 0: both calls contain the expected arguments, in order → exact passes; per turn from `turns`.
    expect(of(samples, 'tcm-subset-args', 0).extra).toMatchObject({
      precision: 1,
      recall: 1,
      pass: true,
      per_turn: [
        { turn: 0, tool_calls: 1, matched: 1 },
        { turn: 1, tool_calls: 1, matched: 1 },
      ],
    });
    // Row 1: cancel pairs, the extra book does not → precision 1/2, recall 1, exact fails.
    expect(of(samples, 'tcm-subset-args', 1).extra).toMatchObject({ precision: 0.5, recall: 1, pass: false });
    expect(of(samples, 'len-turns', 0)).toMatchObject({ passed: false, extra: { length: 3 } });
    // Row 1 has tool calls but no turns: nothing to count, said as such.
    expect(of(samples, 'len-turns', 1).status).toBe('missing');
  });

  it("the catalog's session templates judge each session once, seeing its conversation and tool calls", async () => {
    const names = ['goal_completion', 'trajectory_tool_selection', 'conversation_relevance'];
    for (const t of names) {
      const ev = await g.h.call('POST', '/v1/evaluators', {
        body: { type: 'judge', name: `cat-${t}`, model: MODEL, template: t },
      });
      expect(ev.status, ev.text).toBe(201);
      expect(ev.body.template).toBe(`${t}@1`);
      ids.set(`cat-${t}`, ev.body.id);
    }
    judgePrompts.length = 0;
    const { run, samples } = await runToEnd({
      evaluators: names.map((t) => `cat-${t}`),
      sample: { type: 'sessions', container: 'agents' },
      ground_truth: { type: 'sessions', container: 'agents' },
    });
    expect(run.status, JSON.stringify(run.error)).toBe('completed');
    expect(samples.map((s) => s.status)).toEqual(Array(6).fill('scored'));
    expect(judgePrompts).toHaveLength(6);
    for (const city of ['Paris', 'Lima']) {
      const seen = judgePrompts.filter((p) => p.includes(`user: Weather in ${city}?`));
      expect(seen, city).toHaveLength(3);
      // Every template reads the conversation; the two that name {{trajectory}} get the tool results.
      expect(seen.filter((p) => p.includes(`In ${city} it is sunny and noon.`))).toHaveLength(3);
      expect(seen.filter((p) => p.includes(weather(city)))).toHaveLength(3);
      expect(seen.filter((p) => p.includes('get_time'))).toHaveLength(3);
    }
    expect(of(samples, 'cat-goal_completion', 0)).toMatchObject({ score: 1, passed: true });
  });

  it('refuses bad trajectory configurations with 422s', async () => {
    const bad = async (body: Record<string, unknown>) => {
      const res = await g.h.call('POST', '/v1/evaluators', { body });
      expect(res.status, JSON.stringify(body)).toBe(422);
      return res.body.detail.map((d: any) => d.loc.join('.'));
    };
    expect(await bad({ type: 'tool_call_match', match_mode: 'sometimes' })).toContain('body.match_mode');
    expect(await bad({ type: 'tool_call_match', arguments_match: 'fuzzy' })).toContain(
      'body.arguments_match',
    );
    expect(await bad({ type: 'tool_call_match', expected_field: 'a..b' })).toContain('body.expected_field');
    expect(await bad({ type: 'tool_call_match', tool_schemas: { f: { type: 'object' } } })).toContain(
      'body.tool_schemas',
    );
    expect(
      await bad({
        type: 'tool_call_match',
        arguments_match: 'schema',
        tool_schemas: { f: { type: 'nope' } },
      }),
    ).toContain('body.tool_schemas.f');
    expect(await bad({ type: 'tool_call_match', model: MODEL })).toContain('body.model');
    expect(await bad({ type: 'tool_call_match', pass_threshold: 0.5 })).toContain('body.pass_threshold');
    expect(await bad({ type: 'tool_call_match', length_of: 'turns' })).toContain('body.length_of');
    expect(await bad({ type: 'trajectory_length', length_of: 'turns' })).toContain('body.max_length');
    expect(await bad({ type: 'trajectory_length', min_length: 3, max_length: 2 })).toContain(
      'body.max_length',
    );
    expect(await bad({ type: 'trajectory_length', max_length: -1 })).toContain('body.max_length');
    expect(await bad({ type: 'judge', model: MODEL, prompt: 'x', match_mode: 'exact' })).toContain(
      'body.match_mode',
    );
    // A patch is checked as a creation is.
    const patched = await g.h.call('PATCH', '/v1/evaluators/tcm-exact', { body: { match_mode: 'never' } });
    expect(patched.status).toBe(422);
    const ok = await g.h.call('PATCH', '/v1/evaluators/tcm-exact', { body: { description: 'd' } });
    expect(ok.status, ok.text).toBe(200);
    expect(ok.body).toMatchObject({
      object: 'evaluator.tool_call_match',
      match_mode: 'exact',
      arguments_match: 'exact',
    });
    // Another project's key sees none of them.
    const other = await g.h.key(['*'], 'elsewhere');
    expect((await g.h.call('GET', '/v1/evaluators/tcm-exact', { key: other.key })).status).toBe(404);
    // A monitor has no expected tool calls to compare with.
    const mon = await g.h.call('POST', '/v1/monitors', {
      body: { name: 'm', container: 'agents', evaluators: ['tcm-exact'] },
    });
    expect(mon.status).toBe(422);
  });
});
