// Database-independent: the Messages dialect's translation in both directions; recording goes through the same log writer that test/capture runs on both databases.
import Anthropic from '@anthropic-ai/sdk';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { type Gateway, startGateway } from './gateway-helpers.js';

/*
 * Anthropic's Messages API through the official @anthropic-ai/sdk, to an Anthropic upstream and, translated,
 * to an OpenAI-compatible one that speaks only chat completions.
 */

let g: Gateway;
beforeAll(async () => {
  g = await startGateway();
  const res = await g.h.call('POST', '/v1/models', {
    body: {
      label: 'chat-only',
      base_url: g.mock.baseUrl,
      upstream_model: 'chat-only-upstream',
      input_price_per_mtok: 2,
      output_price_per_mtok: 10,
    },
  });
  expect(res.status).toBe(201);
});
afterAll(async () => {
  await g.close();
});
beforeEach(() => {
  g.mock.reset();
  g.mock.set({ reply: () => 'Hello from the mock upstream.' });
});

function client(options: { key?: string; bearer?: boolean } = {}): Anthropic {
  const key = options.key ?? g.h.admin.key;
  return new Anthropic({
    baseURL: g.h.url,
    maxRetries: 0,
    ...(options.bearer ? { apiKey: null, authToken: key } : { apiKey: key }),
  });
}

async function logById(id: string): Promise<any> {
  const found = (await g.logs('default')).find((l) => l.id === id);
  if (!found) throw new Error(`log ${id} not found`);
  return found;
}

const weather = {
  name: 'get_weather',
  description: 'Weather of a city',
  input_schema: { type: 'object' as const, properties: { city: { type: 'string' } }, required: ['city'] },
};

describe.each([
  ['chat-only', '/v1/chat/completions'],
  ['anthropic/claude-haiku-4-5', '/v1/messages'],
])('messages to %s', (model, upstreamPath) => {
  it('answers a plain message (system, stop_sequences) and records it with usage and cost', async () => {
    const { data, response } = await client()
      .messages.create({
        model,
        max_tokens: 100,
        system: 'Be brief.',
        stop_sequences: ['END'],
        messages: [{ role: 'user', content: 'Hi' }],
        metadata: { user_id: 'u-7' },
      })
      .withResponse();
    expect(g.mock.requests[0]!.path).toBe(upstreamPath);
    expect(data).toMatchObject({
      type: 'message',
      role: 'assistant',
      model,
      stop_reason: 'end_turn',
      content: [{ type: 'text', text: 'Hello from the mock upstream.' }],
      usage: { input_tokens: 12, output_tokens: 7 },
    });
    const sent = g.mock.requests[0]!.body;
    if (upstreamPath === '/v1/chat/completions') {
      expect(sent.messages[0]).toEqual({ role: 'system', content: 'Be brief.' });
      expect(sent.stop).toEqual(['END']);
    } else {
      // Natively: the body as the client wrote it, the upstream's model name in it.
      expect(sent).toEqual({
        model: 'claude-haiku-4-5',
        max_tokens: 100,
        system: 'Be brief.',
        stop_sequences: ['END'],
        messages: [{ role: 'user', content: 'Hi' }],
        metadata: { user_id: 'u-7' },
      });
      expect(data.id).toMatch(/^msg_/);
      expect(data.id).not.toContain('mock');
    }
    const cost = Number(response.headers.get('x-evalgate-cost'));
    expect(cost).toBeGreaterThan(0);
    const log = await logById(response.headers.get('x-evalgate-log-id')!);
    expect(log).toMatchObject({
      model,
      status: 'success',
      output: 'Hello from the mock upstream.',
      input: [
        { role: 'system', content: 'Be brief.' },
        { role: 'user', content: 'Hi' },
      ],
      usage: { prompt_tokens: 12, completion_tokens: 7 },
      metadata: { route: 'messages', user_id: 'u-7', stream: false },
    });
    expect(log.cost).toBeCloseTo(cost, 12);
  });

  it("streams Anthropic's events, which the SDK assembles, and records the answer", async () => {
    const stream = client().messages.stream({
      model,
      max_tokens: 100,
      messages: [{ role: 'user', content: 'Hi' }],
    });
    let text = '';
    stream.on('text', (delta) => {
      text += delta;
    });
    const final = await stream.finalMessage();
    expect(text).toBe('Hello from the mock upstream.');
    expect(final).toMatchObject({
      model,
      stop_reason: 'end_turn',
      content: [{ type: 'text', text: 'Hello from the mock upstream.' }],
      usage: { output_tokens: 7 },
    });
    const { response } = await stream.withResponse();
    const log = await logById(response.headers.get('x-evalgate-log-id')!);
    expect(log).toMatchObject({
      status: 'success',
      output: 'Hello from the mock upstream.',
      usage: { prompt_tokens: 12, completion_tokens: 7 },
      metadata: { route: 'messages', stream: true },
    });
    expect(log.cost).toBeGreaterThan(0);
  });

  it('calls tools, streamed and not, and takes tool results and images back', async () => {
    g.mock.set({
      reply: () => ({ toolCalls: [{ name: 'get_weather', arguments: { city: 'Paris' }, id: 'toolu_1' }] }),
    });
    const ask = {
      model,
      max_tokens: 100,
      tools: [weather],
      messages: [{ role: 'user' as const, content: 'Paris?' }],
    };
    const plain = await client().messages.create(ask);
    expect(plain.stop_reason).toBe('tool_use');
    expect(plain.content.find((b) => b.type === 'tool_use')).toMatchObject({
      type: 'tool_use',
      id: 'toolu_1',
      name: 'get_weather',
      input: { city: 'Paris' },
    });
    const streamed = await client().messages.stream(ask).finalMessage();
    expect(streamed.content.find((b) => b.type === 'tool_use')).toMatchObject({
      name: 'get_weather',
      input: { city: 'Paris' },
    });

    g.mock.reset();
    g.mock.set({ reply: () => 'Sunny.' });
    const pixel =
      'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg==';
    const next = await client().messages.create({
      ...ask,
      messages: [
        { role: 'user', content: 'Paris?' },
        { role: 'assistant', content: plain.content },
        {
          role: 'user',
          content: [
            { type: 'tool_result', tool_use_id: 'toolu_1', content: 'clear sky' },
            { type: 'image', source: { type: 'base64', media_type: 'image/png', data: pixel } },
          ],
        },
      ],
    });
    expect(next.content).toEqual(
      [{ type: 'text', text: 'Sunny.', citations: null }].map((b) =>
        expect.objectContaining({ type: b.type, text: b.text }),
      ),
    );
    const sent = g.mock.requests[0]!.body;
    if (upstreamPath === '/v1/chat/completions') {
      expect(sent.messages.slice(1)).toEqual([
        {
          role: 'assistant',
          content: null,
          tool_calls: [
            {
              id: 'toolu_1',
              type: 'function',
              function: { name: 'get_weather', arguments: '{"city":"Paris"}' },
            },
          ],
        },
        { role: 'tool', tool_call_id: 'toolu_1', content: 'clear sky' },
        {
          role: 'user',
          content: [{ type: 'image_url', image_url: { url: `data:image/png;base64,${pixel}` } }],
        },
      ]);
    } else {
      expect(JSON.stringify(sent.messages)).toContain('"tool_result"');
      expect(JSON.stringify(sent.messages)).toContain(pixel);
    }
  });
});

describe('messages: keys and errors', () => {
  it('takes the key as x-api-key or Authorization: Bearer, and a wrong key raises AuthenticationError', async () => {
    const viaBearer = await client({ bearer: true }).messages.create({
      model: 'chat-only',
      max_tokens: 10,
      messages: [{ role: 'user', content: 'Hi' }],
    });
    expect(viaBearer.type).toBe('message');
    const wrong = await client({ key: 'eg_wrong' })
      .messages.create({ model: 'chat-only', max_tokens: 10, messages: [{ role: 'user', content: 'Hi' }] })
      .catch((e: unknown) => e);
    expect(wrong).toBeInstanceOf(Anthropic.AuthenticationError);
    expect((wrong as InstanceType<typeof Anthropic.APIError>).error).toMatchObject({
      type: 'error',
      error: { type: 'authentication_error' },
    });
  });

  it("answers invalid requests 400 in Anthropic's shape with every problem", async () => {
    const bad = await client()
      .messages.create({
        model: 'chat-only',
        max_tokens: 10,
        messages: [
          { role: 'user', content: [{ type: 'mystery' } as never, { type: 'image', source: {} } as never] },
        ],
      })
      .catch((e: unknown) => e);
    expect(bad).toBeInstanceOf(Anthropic.BadRequestError);
    const message = (bad as InstanceType<typeof Anthropic.APIError>).message;
    expect(message).toContain('body.messages.0.content.0.type');
    expect(message).toContain('body.messages.0.content.1.source');
    const missing = await g.h.call('POST', '/v1/messages', { body: { model: 'chat-only', messages: [] } });
    expect(missing.status).toBe(400);
    expect(missing.body).toMatchObject({ type: 'error', error: { type: 'invalid_request_error' } });
    expect(missing.body.error.message).toContain('max_tokens');
    expect(g.mock.stats.requests).toBe(0);
  });

  it("cannot use another project's registered model (404 not_found_error)", async () => {
    const other = await g.h.key(['*'], 'other-project');
    const err = await client({ key: other.key })
      .messages.create({ model: 'chat-only', max_tokens: 10, messages: [{ role: 'user', content: 'Hi' }] })
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(Anthropic.NotFoundError);
    expect(g.mock.stats.requests).toBe(0);
  });

  it('reports an upstream failure mid-stream as an error event the SDK raises', async () => {
    g.mock.fail({ drop: 'mid-stream', afterChunks: 2 });
    const stream = client().messages.stream({
      model: 'chat-only',
      max_tokens: 10,
      messages: [{ role: 'user', content: 'Hi' }],
    });
    await expect(stream.finalMessage()).rejects.toThrow();
    const { response } = await stream.withResponse();
    const log = await logById(response.headers.get('x-evalgate-log-id')!);
    expect(log.status).toBe('error');
  });
});
