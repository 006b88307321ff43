import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { selectStoredCompletions } from '../../src/openai-evals/stored-completions-repository.js';
import { type Gateway, startGateway } from '../gateway/gateway-helpers.js';

let g: Gateway;
let other: { key: string; projectId: string };
beforeAll(async () => {
  g = await startGateway();
  g.mock.set({
    reply: (r) =>
      r.lastUserText.startsWith('weather')
        ? { toolCalls: [{ name: 'get_weather', arguments: { city: 'Paris' }, id: 'call_1' }] }
        : `echo: ${r.lastUserText}`,
  });
  other = await g.h.key(['*'], 'other-repo');
});
afterAll(async () => {
  await g?.close();
});

const select = (projectId: string, filter: Parameters<typeof selectStoredCompletions>[2]) =>
  selectStoredCompletions(g.h.app.services.db, projectId, filter);

describe('selectStoredCompletions', () => {
  it('selects the stored chat completions of a project by metadata, model, time and limit', async () => {
    const client = g.client();
    const before = Math.floor(Date.now() / 1000);
    const a = await client.chat.completions.create({
      model: 'openai/gpt-4o-mini',
      messages: [{ role: 'user', content: 'one' }],
      store: true,
      metadata: { suite: 'repo', n: '1' },
    });
    const b = await client.chat.completions.create({
      model: 'anthropic/claude-haiku-4-5',
      messages: [
        { role: 'system', content: 'be brief' },
        { role: 'user', content: 'weather in Paris?' },
      ],
      store: true,
      metadata: { suite: 'repo', n: '2' },
    });
    // Not stored: recorded as a task log, but not a stored completion.
    await client.chat.completions.create({
      model: 'openai/gpt-4o-mini',
      messages: [{ role: 'user', content: 'three' }],
      metadata: { suite: 'repo', n: '3' },
    });
    // Another project's stored completion with the same metadata.
    await g.client({ key: other.key }).chat.completions.create({
      model: 'openai/gpt-4o-mini',
      messages: [{ role: 'user', content: 'theirs' }],
      store: true,
      metadata: { suite: 'repo' },
    });
    await g.h.app.services.logWriter.flush();
    expect(a.id).toMatch(/^chatcmpl-/);

    const all = await select(g.h.admin.projectId, { metadata: { suite: 'repo' } });
    expect(all.map((c) => c.id)).toEqual([a.id, b.id]);
    const [first, second] = all;
    expect(first).toMatchObject({
      id: a.id,
      logId: `log_${a.id.slice(9)}`,
      model: 'openai/gpt-4o-mini',
      input: [{ role: 'user', content: 'one' }],
      output: { role: 'assistant', content: 'echo: one', tool_calls: null, finish_reason: 'stop' },
      usage: { prompt_tokens: 12, completion_tokens: 7, total_tokens: 19 },
      metadata: { suite: 'repo', n: '1' },
    });
    expect(first!.createdAt).toBeGreaterThanOrEqual(before - 1);
    expect(first!.request.messages).toEqual([{ role: 'user', content: 'one' }]);
    expect(second!.output.tool_calls).toEqual([
      expect.objectContaining({
        type: 'function',
        function: expect.objectContaining({
          name: 'get_weather',
          arguments: JSON.stringify({ city: 'Paris' }),
        }),
      }),
    ]);
    expect(second!.output.finish_reason).toBe('tool_calls');
    expect(second!.input).toHaveLength(2);

    expect(
      (await select(g.h.admin.projectId, { metadata: { suite: 'repo', n: '2' } })).map((c) => c.id),
    ).toEqual([b.id]);
    expect(
      (await select(g.h.admin.projectId, { metadata: { suite: 'repo' }, model: 'openai/gpt-4o-mini' })).map(
        (c) => c.id,
      ),
    ).toEqual([a.id]);
    expect(
      (await select(g.h.admin.projectId, { metadata: { suite: 'repo' }, limit: 1 })).map((c) => c.id),
    ).toEqual([a.id]);
    expect(await select(g.h.admin.projectId, { metadata: { suite: 'nope' } })).toEqual([]);
    // A metadata value is matched as a string: n=1 is not the number 1.
    expect(await select(g.h.admin.projectId, { metadata: { suite: 'repo', n: '01' } })).toEqual([]);
    const later = Math.floor(Date.now() / 1000) + 5;
    expect(await select(g.h.admin.projectId, { metadata: { suite: 'repo' }, createdAfter: later })).toEqual(
      [],
    );
    expect(
      (await select(g.h.admin.projectId, { metadata: { suite: 'repo' }, createdBefore: later })).length,
    ).toBe(2);
    expect(
      await select(g.h.admin.projectId, { metadata: { suite: 'repo' }, createdBefore: before - 5 }),
    ).toEqual([]);
    const theirs = await select(other.projectId, { metadata: { suite: 'repo' } });
    expect(theirs).toHaveLength(1);
    expect(theirs[0]!.output.content).toBe('echo: theirs');
  });
});
