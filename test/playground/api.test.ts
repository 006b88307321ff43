import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { type Gateway, startGateway } from '../gateway/gateway-helpers.js';

/*
 * The playground's API against the mock upstream: one edited request streamed from two models side by
 * side, each call paid (the project's spend) and recorded in the `playground` container, judged on the
 * spot; requests opened from a prompt version, a task log, a model-call span and a session turn; the
 * edit saved as a prompt version; bad input and other projects' keys refused before anything is called.
 */

let g: Gateway;
let judgeId: string;

interface PlaygroundEvent {
  event: string;
  data: any;
}

/** The run's server-sent events, read whole. */
async function runEvents(body: unknown, key = g.h.admin.key) {
  const res = await fetch(`${g.h.url}/v1/playground/runs`, {
    method: 'POST',
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  const text = await res.text();
  const events: PlaygroundEvent[] = [];
  if (res.headers.get('content-type')?.startsWith('text/event-stream')) {
    for (const block of text.split('\n\n')) {
      const event = /^event: (.*)$/m.exec(block)?.[1];
      const data = /^data: (.*)$/m.exec(block)?.[1];
      if (event && data) events.push({ event, data: JSON.parse(data) });
    }
  }
  return { status: res.status, text, events, body: text.startsWith('{') ? JSON.parse(text) : null };
}

beforeAll(async () => {
  g = await startGateway({ EVALGATE_LOG_FLUSH_MS: '20' });
  const ev = await g.h.call('POST', '/v1/evaluators', {
    body: {
      type: 'judge',
      name: 'helpful',
      model: 'openai/gpt-4o-mini',
      prompt: 'Rate the answer for helpfulness: {{output}}',
    },
  });
  expect(ev.status, ev.text).toBe(201);
  judgeId = ev.body.id;
});
afterAll(async () => {
  await g.close();
});
beforeEach(() => {
  g.mock.reset();
  g.mock.set({
    reply: (req) =>
      req.lastUserText.startsWith('Rate the answer')
        ? { json: { score: 0.75, reasoning: 'clear enough' } }
        : {
            text: `Hello from ${req.body.model}, about ${req.lastUserText}`,
            promptTokens: 12,
            completionTokens: 8,
          },
  });
});

const edited = {
  messages: [
    { role: 'system', content: 'You answer for {{company}}.' },
    { role: 'user', content: 'Where is order {{order}}?' },
  ],
  variables: { company: 'Acme', order: 42 },
  variable_types: { company: 'string', order: 'number' },
  parameters: { temperature: 0.3, max_tokens: 50 },
} as const;

describe('a run against two models', () => {
  it('streams both answers tagged by index, with tokens, latency, cost and the judge scores', async () => {
    await g.h.call('PUT', '/v1/projects/current/budget', { body: { limit_usd: 100, period: 'total' } });
    const before = (await g.h.call('GET', '/v1/projects/current/budget')).body.spend.used_usd as number;
    const run = await runEvents({
      ...edited,
      models: ['openai/gpt-4o-mini', 'openai/gpt-4o'],
      evaluators: [judgeId],
    });
    expect(run.status, run.text).toBe(200);
    const start = run.events[0]!;
    expect(start.event).toBe('start');
    expect(start.data.models).toEqual([
      { index: 0, model: 'openai/gpt-4o-mini' },
      { index: 1, model: 'openai/gpt-4o' },
    ]);
    for (const index of [0, 1]) {
      const deltas = run.events.filter((e) => e.event === 'delta' && e.data.index === index);
      expect(deltas.length).toBeGreaterThan(0);
      const text = deltas.map((d) => d.data.text).join('');
      const answer = run.events.find((e) => e.event === 'answer' && e.data.index === index)!.data.answer;
      expect(answer.output).toBe(text);
      expect(answer.output).toContain('about Where is order 42?');
      expect(answer.usage).toMatchObject({ prompt_tokens: 12, completion_tokens: 8 });
      expect(answer.cost).toBeGreaterThan(0);
      expect(answer.latency_ms).toBeGreaterThanOrEqual(0);
      expect(answer.task_log_id).toMatch(/^log_/);
      const scores = run.events.find((e) => e.event === 'scores' && e.data.index === index)!.data.scores;
      expect(scores).toEqual([
        expect.objectContaining({
          evaluator_id: judgeId,
          name: 'helpful',
          score: 0.75,
          reason: 'clear enough',
        }),
      ]);
    }
    const done = run.events.at(-1)!;
    expect(done.event).toBe('done');
    expect(done.data.answers).toHaveLength(2);
    // The upstream saw the rendered messages and the parameters, for each model.
    const sent = g.mock.requests.filter((r) => !r.lastUserText.startsWith('Rate')).map((r) => r.body);
    expect(sent.map((b) => b.model).sort()).toEqual(['gpt-4o', 'gpt-4o-mini']);
    expect(sent[0].messages[0]).toEqual({ role: 'system', content: 'You answer for Acme.' });
    expect(sent[0].temperature).toBe(0.3);

    // Recorded in the project's playground container, created on first use.
    const logs = await g.logs('playground');
    const ids = done.data.answers.map((a: { task_log_id: string }) => a.task_log_id);
    const mine = logs.filter((l) => ids.includes(l.id));
    expect(mine).toHaveLength(2);
    for (const log of mine) {
      expect(log.status).toBe('success');
      expect(log.metadata).toMatchObject({ route: 'playground', playground_run: start.data.id });
      expect(log.cost).toBeGreaterThan(0);
      expect(log.output).toContain('Hello from');
    }
    // Paid: the answers and the judge calls count against the project's budget.
    const after = (await g.h.call('GET', '/v1/projects/current/budget')).body.spend.used_usd as number;
    const answered = done.data.answers.reduce((n: number, a: { cost: number }) => n + a.cost, 0);
    expect(after - before).toBeGreaterThanOrEqual(answered - 1e-9);
  });

  it('an upstream failure is that model’s answer; the other model still answers', async () => {
    g.mock.fail({ status: 400, message: 'bad tool', match: (r) => r.body.model === 'gpt-4o', times: 5 });
    const run = await runEvents({ ...edited, models: ['openai/gpt-4o-mini', 'openai/gpt-4o'] });
    expect(run.status).toBe(200);
    const answers = run.events.filter((e) => e.event === 'answer').map((e) => e.data);
    const failed = answers.find((a) => a.index === 1)!.answer;
    expect(failed.error).toMatchObject({ message: expect.stringContaining('bad tool') });
    expect(answers.find((a) => a.index === 0)!.answer.error).toBeNull();
  });
});

describe('budgets', () => {
  it('a key whose budget is spent gets budget_exceeded as each answer, and nothing is recorded', async () => {
    const spender = await g.h.key(['inference:write']);
    const set = await g.h.call('PATCH', `/v1/api-keys/${spender.id}`, {
      body: { budget: { limit_usd: 0.000001, period: 'total' } },
    });
    expect(set.status, set.text).toBe(200);
    // The first run spends past the limit (a reservation is the call's largest cost); the next is refused.
    await runEvents({ ...edited, models: ['openai/gpt-4o'] }, spender.key);
    const before = (await g.logs('playground')).length;
    const run = await runEvents({ ...edited, models: ['openai/gpt-4o-mini', 'openai/gpt-4o'] }, spender.key);
    expect(run.status).toBe(200);
    const answers = run.events.filter((e) => e.event === 'answer').map((e) => e.data.answer);
    expect(answers).toHaveLength(2);
    for (const a of answers) {
      expect(a.error).toMatchObject({ code: 'budget_exceeded' });
      expect(a.task_log_id).toBeNull();
    }
    expect(await g.logs('playground')).toHaveLength(before);
  });
});

describe('bad input, refused before anything is called', () => {
  it('an unknown model, five models, a missing or mistyped variable: 422 naming the field', async () => {
    const unknown = await g.h.call('POST', '/v1/playground/runs', {
      body: { ...edited, models: ['openai/gpt-4o-mini', 'nowhere-model'] },
    });
    expect(unknown.status).toBe(422);
    expect(unknown.body.detail[0].loc).toEqual(['body', 'models', 1]);
    const five = await g.h.call('POST', '/v1/playground/runs', {
      body: { ...edited, models: ['a', 'b', 'c', 'd', 'e'] },
    });
    expect(five.status).toBe(422);
    const missing = await g.h.call('POST', '/v1/playground/runs', {
      body: { ...edited, variables: { company: 'Acme' }, models: ['openai/gpt-4o-mini'] },
    });
    expect(missing.status).toBe(422);
    expect(missing.body.detail[0].loc).toEqual(['body', 'variables', 'order']);
    const mistyped = await g.h.call('POST', '/v1/playground/runs', {
      body: { ...edited, variables: { company: 'Acme', order: 'forty' }, models: ['openai/gpt-4o-mini'] },
    });
    expect(mistyped.status).toBe(422);
    const none = await g.h.call('POST', '/v1/playground/runs', { body: { ...edited, models: [] } });
    expect(none.status).toBe(422);
    expect(g.mock.requests).toHaveLength(0);
  });

  it('a key without inference:write cannot run; another project sees nothing of this one', async () => {
    const reader = await g.h.key(['logs:read', 'prompts:*', 'evaluators:read', 'models:read']);
    const refused = await g.h.call('POST', '/v1/playground/runs', {
      key: reader.key,
      body: { ...edited, models: ['openai/gpt-4o-mini'] },
    });
    expect(refused.status).toBe(403);
    expect(refused.body.error).toMatchObject({ code: 'permission_denied' });

    const other = await g.h.key(['*'], 'other-project');
    const theirs = await g.h.call('POST', '/v1/playground/runs', {
      key: other.key,
      body: { ...edited, models: ['openai/gpt-4o-mini'], evaluators: [judgeId] },
    });
    expect(theirs.status).toBe(404);
    const log = (await g.logs('playground'))[0];
    const opened = await g.h.call('GET', `/v1/playground/request?task_log=${log.id}`, { key: other.key });
    expect(opened.status).toBe(404);
    const saved = await g.h.call('POST', '/v1/prompts', {
      body: { name: 'secret', messages: [{ role: 'user', content: 'hi' }] },
    });
    expect(saved.status).toBe(201);
    const prompt = await g.h.call('GET', '/v1/playground/request?prompt=secret', { key: other.key });
    expect(prompt.status).toBe(404);
    expect(g.mock.requests).toHaveLength(0);
  });

  it('opening needs exactly one source; a span without its trace is refused', async () => {
    const none = await g.h.call('GET', '/v1/playground/request');
    expect(none.status).toBe(422);
    const two = await g.h.call('GET', '/v1/playground/request?task_log=log_x&session=s');
    expect(two.status).toBe(422);
    const span = await g.h.call('GET', '/v1/playground/request?span=00f067aa0ba902b7');
    expect(span.status).toBe(422);
    const unknown = await g.h.call('GET', '/v1/playground/request?task_log=log_nothing');
    expect(unknown.status).toBe(404);
  });
});

describe('opening what was recorded, saving the edit', () => {
  it('a task log, its span and its session turn open as the request the call sent', async () => {
    const traceId = '4bf92f3577b34da6a3ce929d0e0e4736';
    const res = await fetch(`${g.h.url}/v1/chat/completions`, {
      method: 'POST',
      headers: {
        authorization: `Bearer ${g.h.admin.key}`,
        'content-type': 'application/json',
        traceparent: `00-${traceId}-00f067aa0ba902b7-01`,
        'x-evalgate-session': 'conv-1',
      },
      body: JSON.stringify({
        model: 'openai/gpt-4o-mini',
        messages: [
          { role: 'system', content: 'Be brief.' },
          { role: 'user', content: [{ type: 'text', text: 'Capital of France?' }] },
        ],
        temperature: 0.1,
        response_format: { type: 'json_object' },
        tools: [{ type: 'function', function: { name: 'lookup', parameters: { type: 'object' } } }],
      }),
    });
    expect(res.status).toBe(200);
    const logId = res.headers.get('x-evalgate-log-id')!;
    await g.h.app.services.logWriter.flush();

    const fromLog = await g.h.call('GET', `/v1/playground/request?task_log=${logId}`);
    expect(fromLog.status, fromLog.text).toBe(200);
    expect(fromLog.body).toMatchObject({
      source: { kind: 'task_log', id: logId, task_log_id: logId },
      messages: [
        { role: 'system', content: 'Be brief.' },
        { role: 'user', content: 'Capital of France?' },
      ],
      parameters: { temperature: 0.1 },
      response_format: { type: 'json_object' },
      model: 'openai/gpt-4o-mini',
    });
    expect(fromLog.body.tools[0].function.name).toBe('lookup');

    const log = (await g.logs('default')).find((l) => l.id === logId);
    const trace = await g.h.call('GET', `/v1/traces/${traceId}`);
    expect(trace.status, trace.text).toBe(200);
    const span = trace.body.spans.find((s: any) => s.model_call?.task_log_id === logId);
    const fromSpan = await g.h.call('GET', `/v1/playground/request?span=${span.span_id}&trace=${traceId}`);
    expect(fromSpan.status, fromSpan.text).toBe(200);
    expect(fromSpan.body.source).toMatchObject({ kind: 'span', task_log_id: logId });

    const fromTurn = await g.h.call('GET', `/v1/playground/request?session=${log.session_id}&turn=0`);
    expect(fromTurn.status, fromTurn.text).toBe(200);
    expect(fromTurn.body.source).toMatchObject({ kind: 'session_turn', task_log_id: logId });
    const noTurn = await g.h.call('GET', `/v1/playground/request?session=${log.session_id}&turn=5`);
    expect(noTurn.status).toBe(404);
  });

  it('a prompt version opens as its template; the edit saved is its next version', async () => {
    const created = await g.h.call('POST', '/v1/prompts', {
      body: {
        name: 'support',
        messages: [{ role: 'user', content: 'Help {{customer}} with {{topic}}' }],
        variables: { customer: 'string', topic: 'string' },
        model: 'openai/gpt-4o-mini',
        parameters: { temperature: 0.5 },
      },
    });
    expect(created.status, created.text).toBe(201);
    const opened = await g.h.call('GET', '/v1/playground/request?prompt=support&version=1');
    expect(opened.status, opened.text).toBe(200);
    expect(opened.body).toMatchObject({
      source: { kind: 'prompt_version' },
      variables: { customer: '', topic: '' },
      prompt: { id: created.body.id, version: 1 },
      prompt_name: 'support',
      model: 'openai/gpt-4o-mini',
    });
    // Run from the version: its task log names the prompt version.
    const run = await runEvents({
      messages: opened.body.messages,
      variables: { customer: 'Ann', topic: 'billing' },
      models: ['openai/gpt-4o-mini'],
      prompt: opened.body.prompt,
    });
    const answer = run.events.find((e) => e.event === 'answer')!.data.answer;
    const log = (await g.logs('playground')).find((l) => l.id === answer.task_log_id);
    expect(log).toMatchObject({ prompt_id: created.body.id, prompt_version: 1 });

    const saved = await g.h.call('POST', '/v1/playground/versions', {
      body: {
        prompt: 'support',
        messages: [{ role: 'user', content: 'Kindly help {{customer}} with {{topic}}' }],
        parameters: { temperature: 0.2 },
        model: 'openai/gpt-4o',
        commit_message: 'from the playground',
      },
    });
    expect(saved.status, saved.text).toBe(201);
    expect(saved.body).toMatchObject({
      version: 2,
      commit_message: 'from the playground',
      model: 'openai/gpt-4o',
    });
    const v2 = await g.h.call('GET', '/v1/prompts/support?version=2');
    expect(v2.body.version.messages[0].content).toBe('Kindly help {{customer}} with {{topic}}');

    const fresh = await g.h.call('POST', '/v1/playground/versions', {
      body: { prompt: 'brand-new', messages: [{ role: 'user', content: 'Hi' }] },
    });
    expect(fresh.status).toBe(201);
    expect(fresh.body.version).toBe(1);
    const badName = await g.h.call('POST', '/v1/playground/versions', {
      body: { prompt: 'no spaces allowed', messages: [{ role: 'user', content: 'Hi' }] },
    });
    expect(badName.status).toBe(422);
    const readOnly = await g.h.key(['prompts:read', 'inference:write']);
    const denied = await g.h.call('POST', '/v1/playground/versions', {
      key: readOnly.key,
      body: { prompt: 'support', messages: [{ role: 'user', content: 'Hi' }] },
    });
    expect(denied.status).toBe(403);
  });
});
