// Database-independent: the CLI's view of the sessions API; session assignment runs on both databases in test/sessions.
/**
 * `evalgate sessions list|get|end` against a real server: an agent's tool loop through the gateway (one
 * session by its header) is listed with its totals and filters, and shown turn by turn with its tool
 * calls, tokens and cost; paging turns, bad options and an unknown session are clear errors.
 */
import type OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Gateway, startGateway } from '../gateway/gateway-helpers.js';
import { agentReply, time, weather } from '../sessions/agent-mock.js';
import { evalgate, evalgateJson } from './cli-helpers.js';

let g: Gateway;

beforeAll(async () => {
  g = await startGateway();
  g.mock.set({ reply: agentReply });
  expect((await g.h.call('POST', '/v1/containers', { body: { label: 'cli-agent' } })).status).toBe(201);
  const client = g.client({
    headers: { 'x-evalgate-container': 'cli-agent', 'x-evalgate-session': 'cli-trip' },
  });
  const tools: OpenAI.ChatCompletionTool[] = ['get_weather', 'get_time'].map((name) => ({
    type: 'function',
    function: { name, parameters: { type: 'object', properties: { city: { type: 'string' } } } },
  }));
  const messages: OpenAI.ChatCompletionMessageParam[] = [{ role: 'user', content: 'Weather in Nice?' }];
  for (let i = 0; i < 3; i++) {
    const res = await client.chat.completions.create({ model: 'openai/gpt-4o-mini', messages, tools });
    const message = res.choices[0]!.message;
    messages.push(message);
    for (const call of message.tool_calls ?? []) {
      if (call.type !== 'function') continue;
      const content = call.function.name === 'get_weather' ? weather('Nice') : time('Nice');
      messages.push({ role: 'tool', tool_call_id: call.id, content });
    }
  }
  // A handoff: the next call goes on from the weather call's result under another system prompt.
  expect((await g.h.call('POST', '/v1/containers', { body: { label: 'cli-handoff' } })).status).toBe(201);
  const other = g.client({ headers: { 'x-evalgate-container': 'cli-handoff' } });
  const ask = { role: 'user' as const, content: 'Weather in Nice?' };
  const first = await other.chat.completions.create({
    model: 'openai/gpt-4o-mini',
    messages: [{ role: 'system', content: 'You triage.' }, ask],
    tools,
  });
  const call = first.choices[0]!.message.tool_calls![0]!;
  await other.chat.completions.create({
    model: 'openai/gpt-4o-mini',
    messages: [
      { role: 'system', content: 'You forecast.' },
      ask,
      { role: 'assistant', content: null, tool_calls: [call] },
      { role: 'tool', tool_call_id: call.id, content: weather('Nice') },
    ],
    tools,
  });
  await g.h.app.services.logWriter.flush();
}, 300_000);
afterAll(async () => {
  await g?.close();
}, 60_000);

describe('evalgate sessions', () => {
  it('lists sessions with their totals, and filters them', async () => {
    const list = await evalgateJson(g.h, ['sessions', 'list', '--container', 'cli-agent']);
    expect(list).toHaveLength(1);
    expect(list[0]).toMatchObject({ key: 'cli-trip', turn_count: 3, error_count: 0 });
    const table = await evalgate(g.h, ['sessions', 'list', '--container', 'cli-agent']);
    expect(table.code).toBe(0);
    expect(table.stdout).toContain('cli-trip');
    expect(table.stdout).toMatch(/1 of 1 sessions|1 sessions?/);
    expect(await evalgateJson(g.h, ['sessions', 'list', '--min-turns', '4'])).toHaveLength(0);
    expect(await evalgateJson(g.h, ['sessions', 'list', '--errors', 'only'])).toHaveLength(0);
    const bad = await evalgate(g.h, ['sessions', 'list', '--errors', 'some']);
    expect(bad.code).not.toBe(0);
    expect(bad.stderr).toContain("--errors must be 'only' or 'none'");
  }, 120_000);

  it('shows a session turn by turn with tool calls, tokens and cost; pages turns', async () => {
    const [s] = await evalgateJson(g.h, ['sessions', 'list', '--container', 'cli-agent']);
    const shown = await evalgate(g.h, ['sessions', 'get', s.id]);
    expect(shown.code).toBe(0);
    expect(shown.stdout).toContain('cli-trip');
    expect(shown.stdout).toContain('get_weather({"city":"Nice"}) -> Sunny in Nice');
    expect(shown.stdout).toContain('get_time({"city":"Nice"}) -> 12:00 in Nice');
    expect(shown.stdout).toContain('In Nice it is sunny and noon.');
    const page = await evalgateJson(g.h, [
      'sessions',
      'get',
      s.id,
      '--turns-offset',
      '1',
      '--turns-limit',
      '1',
    ]);
    expect(page.turns_offset).toBe(1);
    expect(page.turns).toHaveLength(1);
    expect(page.turns[0].output.tool_calls[0].name).toBe('get_time');
    const missing = await evalgate(g.h, ['sessions', 'get', 'sess_missing']);
    expect(missing.code).not.toBe(0);
    expect(missing.stderr).toContain('not found');
  }, 120_000);

  it('shows one tool step: its call, result, turn and the conversation before it', async () => {
    const [s] = await evalgateJson(g.h, ['sessions', 'list', '--container', 'cli-agent']);
    const detail = await evalgateJson(g.h, ['sessions', 'get', s.id, '--json']);
    const call = detail.tool_calls.find((c: any) => c.name === 'get_time');
    const shown = await evalgate(g.h, ['sessions', 'step', s.id, call.id]);
    expect(shown.code, shown.stderr).toBe(0);
    expect(shown.stdout).toContain(`${s.id}#${call.id}`);
    expect(shown.stdout).toMatch(/tool\W+get_time/);
    expect(shown.stdout).toContain('12:00 in');
    expect(shown.stdout).toMatch(/turn\W+2/);
    expect(shown.stdout).toMatch(/before it:\n {2}user: /);
    const json = await evalgateJson(g.h, ['sessions', 'step', s.id, call.id, '--json']);
    expect(json).toMatchObject({ object: 'tool_step', name: 'get_time', turn: 1 });
    const missing = await evalgate(g.h, ['sessions', 'step', s.id, 'call_missing']);
    expect(missing.code).not.toBe(0);
    expect(missing.stderr).toContain("has no tool call 'call_missing'");
  }, 120_000);

  it('marks the turn where the agent changed', async () => {
    const list = await evalgateJson(g.h, ['sessions', 'list', '--container', 'cli-handoff']);
    expect(list.map((s: any) => s.turn_count)).toEqual([2]);
    const shown = await evalgate(g.h, ['sessions', 'get', list[0].id]);
    expect(shown.code, shown.stderr).toBe(0);
    expect(shown.stdout).toContain('[handoff by get_weather] (1 tool results)');
    expect(shown.stdout.match(/\[handoff/g)).toHaveLength(1);
  }, 120_000);

  it('ends a session (the first end kept), shows it ended, and says when a session is unknown', async () => {
    const [s] = await evalgateJson(g.h, ['sessions', 'list', '--container', 'cli-agent']);
    expect(s.ended_at).toBeNull();
    const ended = await evalgate(g.h, ['sessions', 'end', s.id]);
    expect(ended.code, ended.stderr).toBe(0);
    expect(ended.stdout).toContain(`Ended ${s.id} at `);
    const again = await evalgateJson(g.h, ['sessions', 'end', s.id, '--json']);
    expect(again.ended_at).toEqual(expect.any(String));
    expect(ended.stdout).toContain(again.ended_at);
    expect((await evalgate(g.h, ['sessions', 'get', s.id])).stdout).toMatch(/ended\W+\d{4}-/);
    const missing = await evalgate(g.h, ['sessions', 'end', 'sess_missing']);
    expect(missing.code).not.toBe(0);
    expect(missing.stderr).toContain('not found');
  }, 120_000);
});
