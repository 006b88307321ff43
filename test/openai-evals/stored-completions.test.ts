import OpenAI from 'openai';
import type {
  ChatCompletion,
  ChatCompletionDeleted,
  ChatCompletionStoreMessage,
} from 'openai/resources/chat/completions';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Gateway, startGateway } from '../gateway/gateway-helpers.js';

let g: Gateway;
let client: OpenAI;
const MODEL = 'openai/gpt-4o-mini';

beforeAll(async () => {
  g = await startGateway();
  g.mock.set({
    reply: (r) =>
      r.lastUserText.startsWith('weather')
        ? { toolCalls: [{ name: 'get_weather', arguments: { city: 'Oslo' }, id: 'call_w' }] }
        : `echo: ${r.lastUserText}`,
  });
  client = g.client();
});
afterAll(async () => {
  await g?.close();
});

const ask = (content: string, extra: Partial<OpenAI.ChatCompletionCreateParamsNonStreaming> = {}) =>
  client.chat.completions.create({ model: MODEL, messages: [{ role: 'user', content }], ...extra });

async function collect<T>(iter: AsyncIterable<T>): Promise<T[]> {
  const out: T[] = [];
  for await (const x of iter) out.push(x);
  return out;
}

describe('stored chat completions with the official openai package', () => {
  it('stores a completion made with store: true under the id the client got, and serves it', async () => {
    const before = Math.floor(Date.now() / 1000);
    const { data: made, response } = await client.chat.completions
      .create({
        model: MODEL,
        messages: [
          { role: 'system', content: 'Answer briefly.' },
          {
            role: 'user',
            content: [
              { type: 'text', text: 'hello ' },
              { type: 'text', text: 'there' },
            ],
          },
        ],
        store: true,
        metadata: { topic: 'greeting', suite: 'basic' },
      })
      .withResponse();
    const logId = response.headers.get('x-evalgate-log-id')!;
    expect(made.id).toBe(`chatcmpl-${logId.slice(4)}`);
    expect(made.choices[0]!.message.content).toBe('echo: hello there');

    const got: ChatCompletion & { metadata?: unknown } = await client.chat.completions.retrieve(made.id);
    expect(got).toEqual({
      id: made.id,
      object: 'chat.completion',
      created: expect.any(Number),
      model: MODEL,
      choices: [
        {
          index: 0,
          message: { role: 'assistant', content: 'echo: hello there', refusal: null },
          finish_reason: 'stop',
          logprobs: null,
        },
      ],
      usage: expect.objectContaining({ prompt_tokens: 12, completion_tokens: 7, total_tokens: 19 }),
      service_tier: null,
      system_fingerprint: 'mock',
      moderation: null,
      metadata: { topic: 'greeting', suite: 'basic' },
    });
    expect(got.created).toBeGreaterThanOrEqual(before - 1);

    const messages: ChatCompletionStoreMessage[] = await collect(
      client.chat.completions.messages.list(made.id),
    );
    expect(messages).toEqual([
      { id: `${made.id}-0`, role: 'system', content: 'Answer briefly.', content_parts: null, refusal: null },
      {
        id: `${made.id}-1`,
        role: 'user',
        content: 'hello there',
        content_parts: [
          { type: 'text', text: 'hello ' },
          { type: 'text', text: 'there' },
        ],
        refusal: null,
      },
    ]);
    const desc = await client.chat.completions.messages.list(made.id, { order: 'desc', limit: 1 });
    expect(desc.data.map((m) => m.id)).toEqual([`${made.id}-1`]);
    expect(desc.has_more).toBe(true);
    expect((await desc.getNextPage()).data.map((m) => m.id)).toEqual([`${made.id}-0`]);
  });

  it('keeps a completion without store: true as a task log only, with the upstream id', async () => {
    const { data: made, response } = await ask('not kept', {
      metadata: { suite: 'unstored' },
    }).withResponse();
    const logId = response.headers.get('x-evalgate-log-id')!;
    expect(made.id).not.toBe(`chatcmpl-${logId.slice(4)}`);
    await expect(client.chat.completions.retrieve(`chatcmpl-${logId.slice(4)}`)).rejects.toBeInstanceOf(
      OpenAI.NotFoundError,
    );
    expect((await client.chat.completions.list({ metadata: { suite: 'unstored' } })).data).toEqual([]);
    const log = (await g.logs('default')).find((l) => l.id === logId);
    expect(log.metadata).toMatchObject({ suite: 'unstored', store: false, route: 'chat' });
  });

  it('stores a streamed completion: every chunk carries the stored id, tool calls are kept', async () => {
    const stream = await client.chat.completions.create({
      model: MODEL,
      messages: [{ role: 'user', content: 'weather in Oslo?' }],
      tools: [{ type: 'function', function: { name: 'get_weather', parameters: { type: 'object' } } }],
      stream: true,
      stream_options: { include_usage: true },
      store: true,
      metadata: { suite: 'stream' },
    });
    const chunks = await collect(stream);
    const ids = new Set(chunks.map((c) => c.id));
    expect(ids.size).toBe(1);
    const [id] = [...ids] as [string];
    expect(id).toMatch(/^chatcmpl-[0-9a-z]{26}$/);
    expect(chunks.at(-1)!.usage).toMatchObject({ total_tokens: 19 });
    const got = await client.chat.completions.retrieve(id);
    expect(got.choices[0]!.finish_reason).toBe('tool_calls');
    expect(got.choices[0]!.message.tool_calls).toEqual([
      expect.objectContaining({
        id: 'call_w',
        type: 'function',
        function: { name: 'get_weather', arguments: JSON.stringify({ city: 'Oslo' }) },
      }),
    ]);
    expect((got as unknown as { metadata: unknown }).metadata).toEqual({ suite: 'stream' });
  });

  it('lists by metadata and model, in both orders, across pages', async () => {
    const made: string[] = [];
    for (let i = 0; i < 5; i++) {
      made.push(
        (await ask(`page ${i}`, { store: true, metadata: { suite: 'pages', parity: String(i % 2) } })).id,
      );
    }
    await client.chat.completions.create({
      model: 'anthropic/claude-haiku-4-5',
      messages: [{ role: 'user', content: 'other model' }],
      store: true,
      metadata: { suite: 'pages', parity: '0' },
    });
    const first = await client.chat.completions.list({
      metadata: { suite: 'pages' },
      model: MODEL,
      limit: 2,
    });
    expect(first.data.map((c) => c.id)).toEqual(made.slice(0, 2));
    expect(first.has_more).toBe(true);
    const all = await collect(
      client.chat.completions.list({ metadata: { suite: 'pages' }, model: MODEL, limit: 2 }),
    );
    expect(all.map((c) => c.id)).toEqual(made);
    const desc = await collect(
      client.chat.completions.list({ metadata: { suite: 'pages' }, model: MODEL, order: 'desc', limit: 2 }),
    );
    expect(desc.map((c) => c.id)).toEqual([...made].reverse());
    const even = await collect(client.chat.completions.list({ metadata: { suite: 'pages', parity: '0' } }));
    expect(even).toHaveLength(4);
    expect(even.filter((c) => c.model === MODEL).map((c) => c.id)).toEqual([made[0], made[2], made[4]]);
    // The raw page as the API answers it.
    const raw = await g.h.call('GET', `/v1/chat/completions?metadata%5Bsuite%5D=pages&limit=3&order=asc`);
    expect(raw.status).toBe(200);
    expect(raw.body).toMatchObject({
      object: 'list',
      first_id: made[0],
      last_id: made[2],
      has_more: true,
    });
  });

  it('updates metadata (replacing it, null clearing it) and deletes', async () => {
    const made = await ask('to update', { store: true, metadata: { suite: 'update', stage: 'draft' } });
    const updated = await client.chat.completions.update(made.id, {
      metadata: { stage: 'final', owner: 'qa' },
    });
    expect((updated as unknown as { metadata: unknown }).metadata).toEqual({ stage: 'final', owner: 'qa' });
    expect(
      (await client.chat.completions.list({ metadata: { stage: 'final', owner: 'qa' } })).data.map(
        (c) => c.id,
      ),
    ).toEqual([made.id]);
    expect((await client.chat.completions.list({ metadata: { suite: 'update' } })).data).toEqual([]);
    // The gateway's own keys stay on the task log.
    const log = (await g.logs('default')).find((l) => l.id === `log_${made.id.slice(9)}`);
    expect(log.metadata).toMatchObject({ stage: 'final', owner: 'qa', route: 'chat', store: true });

    const cleared = await client.chat.completions.update(made.id, { metadata: null });
    expect((cleared as unknown as { metadata: unknown }).metadata).toEqual({});

    // The Python package sends DELETE labelled JSON with no body at all: that is no body, not a bad one.
    const other = await ask('to delete', { store: true });
    const bare = await g.h.call('DELETE', `/v1/chat/completions/${other.id}`, {
      raw: '',
      headers: { 'content-type': 'application/json' },
    });
    expect(bare.status, bare.text).toBe(200);
    expect(bare.body).toEqual({ id: other.id, object: 'chat.completion.deleted', deleted: true });

    const deleted: ChatCompletionDeleted = await client.chat.completions.delete(made.id);
    expect(deleted).toEqual({ id: made.id, object: 'chat.completion.deleted', deleted: true });
    await expect(client.chat.completions.retrieve(made.id)).rejects.toBeInstanceOf(OpenAI.NotFoundError);
    await expect(client.chat.completions.delete(made.id)).rejects.toBeInstanceOf(OpenAI.NotFoundError);
    await expect(client.chat.completions.messages.list(made.id)).rejects.toBeInstanceOf(OpenAI.NotFoundError);
    await expect(client.chat.completions.update(made.id, { metadata: {} })).rejects.toBeInstanceOf(
      OpenAI.NotFoundError,
    );
    // The task log stays: the container's record of the call.
    expect((await g.logs('default')).some((l) => l.id === `log_${made.id.slice(9)}`)).toBe(true);
  });

  it("answers 404 for another project's completion and 401 for a wrong key", async () => {
    const made = await ask('mine', { store: true, metadata: { suite: 'tenancy' } });
    const other = await g.h.key(['*'], 'stored-other');
    const theirs = g.client({ key: other.key });
    await expect(theirs.chat.completions.retrieve(made.id)).rejects.toBeInstanceOf(OpenAI.NotFoundError);
    await expect(theirs.chat.completions.update(made.id, { metadata: {} })).rejects.toBeInstanceOf(
      OpenAI.NotFoundError,
    );
    await expect(theirs.chat.completions.delete(made.id)).rejects.toBeInstanceOf(OpenAI.NotFoundError);
    await expect(theirs.chat.completions.messages.list(made.id)).rejects.toBeInstanceOf(OpenAI.NotFoundError);
    expect((await theirs.chat.completions.list({ metadata: { suite: 'tenancy' } })).data).toEqual([]);

    const wrong = g.client({ key: 'eg_wrong_key' });
    for (const attempt of [
      () => wrong.chat.completions.list(),
      () => wrong.chat.completions.retrieve(made.id),
      () => wrong.chat.completions.delete(made.id),
    ]) {
      await expect(attempt()).rejects.toBeInstanceOf(OpenAI.AuthenticationError);
    }
    expect((await client.chat.completions.retrieve(made.id)).id).toBe(made.id);
  });

  it('reads with logs:read and changes with logs:write only', async () => {
    const made = await ask('perm', { store: true, metadata: { suite: 'perm' } });
    const reader = g.client({ key: (await g.h.key(['logs:read'])).key });
    expect((await reader.chat.completions.retrieve(made.id)).id).toBe(made.id);
    expect((await reader.chat.completions.list({ metadata: { suite: 'perm' } })).data).toHaveLength(1);
    await expect(reader.chat.completions.delete(made.id)).rejects.toBeInstanceOf(
      OpenAI.PermissionDeniedError,
    );
    const caller = g.client({ key: (await g.h.key(['inference:write'])).key });
    await expect(caller.chat.completions.list()).rejects.toBeInstanceOf(OpenAI.PermissionDeniedError);
  });

  it('answers 400 naming every problem of a bad request', async () => {
    const made = await ask('bad', { store: true });
    const bad = async (run: () => Promise<unknown>) => {
      const err = await run().then(
        () => null,
        (e: unknown) => e,
      );
      expect(err).toBeInstanceOf(OpenAI.BadRequestError);
      return (err as InstanceType<typeof OpenAI.BadRequestError>).message;
    };
    const long = 'k'.repeat(65);
    const tooMany = Object.fromEntries(Array.from({ length: 17 }, (_, i) => [`k${i}`, 'v']));
    let message = await bad(() =>
      client.chat.completions.update(made.id, {
        metadata: { [long]: 'x', ok: 'v'.repeat(513), n: 5 as unknown as string },
      }),
    );
    expect(message).toContain(`metadata.${long}: key longer than 64 characters`);
    expect(message).toContain('metadata.ok: longer than 512 characters');
    expect(message).toContain('metadata.n: must be a string');
    message = await bad(() => client.chat.completions.update(made.id, { metadata: tooMany }));
    expect(message).toContain('has 17 keys, at most 16 allowed');
    message = await bad(() =>
      client.chat.completions.update(made.id, {
        colour: 'red',
      } as unknown as OpenAI.ChatCompletionUpdateParams),
    );
    expect(message).toContain('metadata: is required');
    expect(message).toContain('colour: unknown field');
    message = await bad(() =>
      client.chat.completions.list({
        limit: 0,
        order: 'sideways' as 'asc',
        query: { colour: 'red' },
      } as never),
    );
    expect(message).toMatch(/limit/);
    message = await bad(() => client.chat.completions.list({ limit: 1000 }));
    expect(message).toMatch(/limit/);
    message = await bad(() => client.chat.completions.list({ metadata: { [long]: 'x' } }));
    expect(message).toContain('key longer than 64 characters');
    const raw = await g.h.call('GET', '/v1/chat/completions?colour=red&order=up', { unchecked: true });
    expect(raw.status).toBe(400);
    expect(raw.body.error.message).toMatch(/order/);
    const unknown = await g.h.call('GET', '/v1/chat/completions?colour=red', { unchecked: true });
    expect(unknown.status).toBe(400);
    expect(unknown.body.error.message).toContain('query.colour: unknown parameter');
    const notJson = await g.h.call('POST', `/v1/chat/completions/${made.id}`, {
      raw: '{"metadata":',
      headers: { 'content-type': 'application/json' },
      unchecked: true,
    });
    expect(notJson.status).toBe(400);
    for (const id of ['nope', 'chatcmpl-', 'chatcmpl-../../x', `chatcmpl-${'a'.repeat(150)}`]) {
      await expect(client.chat.completions.retrieve(id)).rejects.toBeInstanceOf(OpenAI.NotFoundError);
    }
  });
});
