import type OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Gateway, startGateway } from '../gateway/gateway-helpers.js';
import { waitFor } from '../helpers/wait.js';
import { agentReply, time, weather } from './agent-mock.js';

let g: Gateway;
const MODEL = 'openai/gpt-4o-mini';

beforeAll(async () => {
  g = await startGateway();
  g.mock.set({ reply: agentReply });
});
afterAll(async () => {
  await g?.close();
});

const tools: OpenAI.ChatCompletionTool[] = [
  {
    type: 'function',
    function: {
      name: 'get_weather',
      parameters: { type: 'object', properties: { city: { type: 'string' } } },
    },
  },
  {
    type: 'function',
    function: { name: 'get_time', parameters: { type: 'object', properties: { city: { type: 'string' } } } },
  },
];

/** A hand-written tool loop with the official client: what every agent framework does underneath. */
async function toolLoop(client: OpenAI, question: string): Promise<string> {
  const messages: OpenAI.ChatCompletionMessageParam[] = [
    { role: 'system', content: 'You are a helpful agent.' },
    { role: 'user', content: question },
  ];
  for (let i = 0; i < 5; i++) {
    const res = await client.chat.completions.create({ model: MODEL, messages, tools });
    const message = res.choices[0]!.message;
    messages.push(message);
    if (!message.tool_calls?.length) return message.content ?? '';
    for (const call of message.tool_calls) {
      if (call.type !== 'function') continue;
      const { city } = JSON.parse(call.function.arguments) as { city: string };
      // Reformatted on purpose: continuity compares the conversation, not its JSON spacing.
      call.function.arguments = JSON.stringify({ city }, null, 2);
      messages.push({
        role: 'tool',
        tool_call_id: call.id,
        content: call.function.name === 'get_weather' ? weather(city) : time(city),
      });
    }
  }
  throw new Error('the loop did not end');
}

async function createContainer(label: string, continuity = true): Promise<string> {
  const res = await g.h.call('POST', '/v1/containers', { body: { label, session_continuity: continuity } });
  // 409: made by an earlier attempt of the same test (a retry).
  if (res.status === 409) return (await g.h.call('GET', `/v1/containers/${label}`)).body.id;
  expect(res.status).toBe(201);
  return res.body.id;
}

async function sessions(container: string): Promise<any[]> {
  const res = await g.h.call('GET', `/v1/sessions?container=${container}&limit=100`);
  expect(res.status).toBe(200);
  return res.body.data;
}

describe('session assignment in the log writer', () => {
  it('groups a tool loop into one session by continuity, turns and tool calls in order', async () => {
    await createContainer('loop');
    const client = g.client({ headers: { 'x-evalgate-container': 'loop' } });
    expect(await toolLoop(client, 'Weather in Paris?')).toBe('In Paris it is sunny and noon.');
    // The first batch of a fresh writer thread may take longer than a read waits for it.
    let list: any[] = [];
    await waitFor(async () => {
      list = await sessions('loop');
      return list.length === 1 && list[0].turn_count === 3;
    }, 60_000);
    expect(list).toHaveLength(1);
    expect(list[0]).toMatchObject({
      turn_count: 3,
      error_count: 0,
      assigned_by: 'continuity',
      models: [MODEL],
    });
    const detail = await g.h.call('GET', `/v1/sessions/${list[0].id}`);
    expect(detail.status).toBe(200);
    expect(detail.body.turns.map((t: any) => t.output.tool_calls.map((c: any) => c.name))).toEqual([
      ['get_weather'],
      ['get_time'],
      [],
    ]);
    expect(detail.body.turns[0].input).toEqual([
      { role: 'system', content: 'You are a helpful agent.' },
      { role: 'user', content: 'Weather in Paris?' },
    ]);
    expect(detail.body.turns[1].input).toEqual([
      { role: 'tool', content: 'Sunny in Paris', tool_call_id: expect.stringMatching(/^call_w_/) },
    ]);
    expect(detail.body.turns[2].output.content).toBe('In Paris it is sunny and noon.');
    expect(detail.body.tool_calls).toEqual([
      expect.objectContaining({
        name: 'get_weather',
        arguments: { city: 'Paris' },
        result: 'Sunny in Paris',
        turn: 0,
      }),
      expect.objectContaining({
        name: 'get_time',
        arguments: { city: 'Paris' },
        result: '12:00 in Paris',
        turn: 1,
      }),
    ]);
    expect(detail.body.usage.total_tokens).toBe(3 * (12 + 7));
    const logs = await g.logs('loop');
    expect(logs.map((l) => l.session_id)).toEqual([list[0].id, list[0].id, list[0].id]);
  });

  it('keeps two concurrent loops in one container apart', async () => {
    await createContainer('two');
    const client = g.client({ headers: { 'x-evalgate-container': 'two' } });
    await Promise.all([toolLoop(client, 'Weather in Rome?'), toolLoop(client, 'Weather in Lima?')]);
    const list = await sessions('two');
    expect(list).toHaveLength(2);
    for (const s of list) expect(s.turn_count).toBe(3);
    for (const s of list) {
      const detail = await g.h.call('GET', `/v1/sessions/${s.id}`);
      const cities = new Set(detail.body.tool_calls.map((c: any) => c.arguments.city));
      expect(cities.size).toBe(1);
    }
  });

  it('assigns no session with continuity off, and the header still groups', async () => {
    await createContainer('off', false);
    const client = g.client({ headers: { 'x-evalgate-container': 'off' } });
    await toolLoop(client, 'Weather in Oslo?');
    expect(await sessions('off')).toHaveLength(0);
    expect((await g.logs('off')).every((l) => l.session_id === null)).toBe(true);
    const named = g.client({ headers: { 'x-evalgate-container': 'off', 'x-evalgate-session': 'chat-42' } });
    await named.chat.completions.create({ model: MODEL, messages: [{ role: 'user', content: 'one' }] });
    await named.chat.completions.create({ model: MODEL, messages: [{ role: 'user', content: 'unrelated' }] });
    const list = await sessions('off');
    expect(list).toHaveLength(1);
    expect(list[0]).toMatchObject({ assigned_by: 'header', key: 'chat-42', turn_count: 2 });
  });

  it('follows previous_response_id and shared trace ids', async () => {
    await createContainer('resp');
    g.mock.set({ reply: () => 'plain answer' });
    const client = g.client({ headers: { 'x-evalgate-container': 'resp' } });
    const first = await client.responses.create({ model: MODEL, input: 'first question' });
    // A different question: only previous_response_id ties it to the first.
    await client.responses.create({ model: MODEL, input: 'second question', previous_response_id: first.id });
    const list = await sessions('resp');
    expect(list).toHaveLength(1);
    expect(list[0].turn_count).toBe(2);
    g.mock.set({ reply: agentReply });
  });

  it('answers 404 for an unknown session and for another project’s, 422 for bad filters', async () => {
    expect((await g.h.call('GET', '/v1/sessions/sess_unknown')).status).toBe(404);
    const list = await sessions('loop');
    const other = await g.h.key(['*'], 'other-project');
    const res = await g.h.call('GET', `/v1/sessions/${list[0].id}`, { key: other.key });
    expect(res.status).toBe(404);
    expect(res.body.error.code).toBe('not_found');
    const theirs = await g.h.call('GET', '/v1/sessions', { key: other.key });
    expect(theirs.body.total).toBe(0);
    expect((await g.h.call('GET', '/v1/sessions?container=nope')).status).toBe(404);
    expect((await g.h.call('GET', '/v1/sessions?min_turns=-1')).status).toBe(422);
    expect((await g.h.call('GET', '/v1/sessions?since=yesterday')).status).toBe(422);
  });

  it('filters by length, errors, model and time', async () => {
    const all = await g.h.call('GET', '/v1/sessions?container=loop&min_turns=3&max_turns=3&errors=false');
    expect(all.body.total).toBe(1);
    expect((await g.h.call('GET', '/v1/sessions?container=loop&min_turns=4')).body.total).toBe(0);
    expect((await g.h.call('GET', '/v1/sessions?container=loop&errors=true')).body.total).toBe(0);
    expect(
      (await g.h.call('GET', `/v1/sessions?container=loop&model=${encodeURIComponent(MODEL)}`)).body.total,
    ).toBe(1);
    expect((await g.h.call('GET', '/v1/sessions?container=loop&model=other')).body.total).toBe(0);
    // `_` and `%` in a model's name are themselves, not wildcards, on both databases.
    await createContainer('underscored');
    const underscored = g.client({ headers: { 'x-evalgate-container': 'underscored' } });
    await underscored.chat.completions.create({
      model: 'openai/gpt_4_x',
      messages: [{ role: 'user', content: 'hi' }],
    });
    const byModel = async (model: string) =>
      (await g.h.call('GET', `/v1/sessions?container=underscored&model=${encodeURIComponent(model)}`)).body
        .total;
    expect(await byModel('openai/gpt_4_x')).toBe(1);
    expect(await byModel('openai/gpt%x')).toBe(0);
    expect(await byModel('openai/gpt-4-x')).toBe(0);
    expect((await g.h.call('GET', '/v1/sessions?container=loop&since=2999-01-01T00:00:00Z')).body.total).toBe(
      0,
    );
    expect((await g.h.call('GET', '/v1/sessions?container=loop&until=2000-01-01T00:00:00Z')).body.total).toBe(
      0,
    );
  });
});

describe('pruning session keys', () => {
  it('deletes continuity and trace keys past the window, keeps header keys', async () => {
    const { pruneExpiredKeys } = await import('../../src/capture/sessions/assign.js');
    const db = g.h.app.services.db;
    const count = async (prefix: string) =>
      Number(
        (
          await db
            .selectFrom('task_session_keys')
            .select((eb) => eb.fn.countAll<number | string>().as('n'))
            .where('key', 'like', `${prefix}%`)
            .executeTakeFirst()
        )?.n ?? 0,
      );
    await g.h.app.services.logWriter.flush();
    expect(await count('p:')).toBeGreaterThan(0);
    expect(await count('h:')).toBe(1);
    // Now: nothing is past the window yet.
    await db.transaction().execute((trx) => pruneExpiredKeys(trx));
    expect(await count('p:')).toBeGreaterThan(0);
    // An hour on: every continuity hash is past it; the header's key names its session for good.
    const deleted = await db.transaction().execute((trx) => pruneExpiredKeys(trx, Date.now() + 3_600_000));
    expect(deleted).toBeGreaterThan(0);
    expect(await count('p:')).toBe(0);
    expect(await count('h:')).toBe(1);
  });
});

describe('the TypeScript client', () => {
  it('lists sessions page by page and gets one, 404 as a typed error', async () => {
    const { Evalgate } = await import('../../src/client/index.js');
    const client = new Evalgate({ baseURL: g.h.url, apiKey: g.h.admin.key, env: {} });
    const ids: string[] = [];
    for await (const s of client.sessions.list({ container: 'loop', limit: 1 })) ids.push(s.id);
    expect(ids).toHaveLength(1);
    const detail = await client.sessions.get(ids[0]!);
    expect(detail.turns).toHaveLength(3);
    await expect(client.sessions.get('sess_missing')).rejects.toMatchObject({ status: 404 });
  });
});

describe('trace and conversation keys on recorded calls', () => {
  it('groups calls sharing a trace id, and Responses calls naming one conversation', async () => {
    const containerId = await createContainer('keys');
    const writer = g.h.app.services.logWriter;
    const base = (n: number, extra: Record<string, unknown>) => ({
      id: `log_${String(n).padStart(26, '0')}`,
      projectId: g.h.admin.projectId,
      containerId,
      model: MODEL,
      input: [{ role: 'user', content: `unrelated question ${n}` }],
      output: 'answer',
      response: { choices: [{ message: { role: 'assistant', content: `answer ${n}` } }] },
      usage: null,
      latencyMs: 1,
      cost: 0,
      status: 'success' as const,
      error: null,
      metadata: {},
      createdAt: new Date().toISOString(),
      ...extra,
    });
    const trace = 'a'.repeat(32);
    // Traces from the caller (a parent span): a trace the gateway gave a call of its own joins nothing.
    const parentSpanId = 'c'.repeat(16);
    writer.write(base(1, { traceId: trace, parentSpanId }));
    writer.write(base(2, { traceId: trace, parentSpanId }));
    writer.write(base(3, { traceId: 'b'.repeat(32), parentSpanId }));
    const conversation = {
      requestText: JSON.stringify({ model: MODEL, input: 'x', conversation: 'conv_1' }),
    };
    writer.write(base(4, { ...conversation, metadata: { route: 'responses' } }));
    writer.write(base(5, { ...conversation, metadata: { route: 'responses' } }));
    await writer.flush();
    const list = (await sessions('keys')).map((s) => [s.assigned_by, s.key, s.turn_count]);
    expect(list.sort()).toEqual(
      [
        ['conversation', 'conv_1', 2],
        ['trace', trace, 2],
        ['trace', 'b'.repeat(32), 1],
      ].sort(),
    );
  });
});

describe('continuity past a handoff', () => {
  it('follows a conversation past a handoff (another system prompt after a tool call), and only there', async () => {
    await createContainer('handoff');
    const client = g.client({ headers: { 'x-evalgate-container': 'handoff' } });
    const ask = (messages: OpenAI.ChatCompletionMessageParam[]) =>
      client.chat.completions.create({ model: MODEL, messages, tools }).then((r) => r.choices[0]!.message);
    const user = { role: 'user' as const, content: 'Weather in Oslo?' };
    const calls = (message: OpenAI.ChatCompletionMessage) => ({
      role: 'assistant' as const,
      content: null,
      tool_calls: message.tool_calls,
    });
    const result = (message: OpenAI.ChatCompletionMessage, content: string) => ({
      role: 'tool' as const,
      tool_call_id: message.tool_calls![0]!.id,
      content,
    });
    // A triage agent asks for the weather; the next agent (its own system prompt) goes on from the result.
    const first = await ask([{ role: 'system', content: 'You triage.' }, user]);
    const handedOff = [
      { role: 'system' as const, content: 'You forecast.' },
      user,
      calls(first),
      result(first, weather('Oslo')),
    ];
    const second = await ask(handedOff);
    // Another run that asked the same question and got the same call under another id stays apart.
    const other = { ...first, tool_calls: [{ ...first.tool_calls![0]!, id: 'call_other_run' }] };
    await ask([
      { role: 'system', content: 'You forecast.' },
      user,
      calls(other),
      result(other, weather('Oslo')),
    ]);
    // The handed-off conversation ends with text; a call repeating it under a third prompt (no tool call
    // links them) starts its own session, as before.
    const done = [...handedOff, calls(second), result(second, time('Oslo'))];
    const answer = await ask(done);
    expect(answer.content).toBe('In Oslo it is sunny and noon.');
    await ask([
      { role: 'system', content: 'You summarise.' },
      ...done.slice(1),
      { role: 'assistant', content: answer.content },
      { role: 'user', content: 'Thanks' },
    ]);
    const logs = await g.logs('handoff');
    expect(logs).toHaveLength(5);
    const [a, b, c, d, e] = logs.map((l) => l.session_id);
    expect([b, d]).toEqual([a, a]);
    expect(new Set([a, c, e]).size).toBe(3);
    const detail = await g.h.call('GET', `/v1/sessions/${a}`);
    expect(detail.body.turns.map((t: any) => t.handoff)).toEqual([
      null,
      { from: null, to: null, tool: 'get_weather', tool_call_id: first.tool_calls![0]!.id },
      null,
    ]);
  });
});
