// Database-independent: each dialect's error bodies and token counting, decided before any store.
import Anthropic from '@anthropic-ai/sdk';
import { countTokens } from 'gpt-tokenizer/encoding/o200k_base';
import OpenAI from 'openai';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { type Gateway, startGateway } from './gateway-helpers.js';

/*
 * `POST /v1/messages/count_tokens` through the official Anthropic SDK (the upstream's count for Anthropic
 * models, an estimate otherwise), Anthropic's error shape on every path under /v1/messages, and OpenAI's
 * `type` and `param` on the errors of the OpenAI-dialect routes, read by the official OpenAI SDK.
 */

let g: Gateway;
let other: { key: string };
const hi = [{ role: 'user' as const, content: 'Hi' }];

beforeAll(async () => {
  g = await startGateway();
  const res = await g.h.call('POST', '/v1/models', {
    body: { label: 'chat-only', base_url: g.mock.baseUrl, upstream_model: 'chat-only-upstream' },
  });
  expect(res.status).toBe(201);
  other = await g.h.key(['*'], 'elsewhere');
});
afterAll(async () => {
  await g.close();
});
beforeEach(() => {
  g.mock.reset();
  g.mock.set({ reply: () => 'Hello from the mock upstream.', promptTokens: 12 });
});

const anthropic = (key = g.h.admin.key) => new Anthropic({ baseURL: g.h.url, apiKey: key, maxRetries: 0 });
const openai = (key = g.h.admin.key) => new OpenAI({ baseURL: `${g.h.url}/v1`, apiKey: key, maxRetries: 0 });

describe('POST /v1/messages/count_tokens', () => {
  it("answers the upstream's count for an Anthropic model", async () => {
    g.mock.set({ promptTokens: 41 });
    const { data, response } = await anthropic()
      .messages.countTokens({ model: 'anthropic/claude-haiku-4-5', system: 'Be brief.', messages: hi })
      .withResponse();
    expect(data).toEqual({ input_tokens: 41 });
    expect(response.headers.get('x-evalgate-token-count')).toBe('upstream');
    const sent = g.mock.requests.find((r) => r.path === '/v1/messages/count_tokens');
    expect(sent?.body).toMatchObject({ model: 'claude-haiku-4-5', system: 'Be brief.', messages: hi });
    expect(sent?.headers['x-api-key']).toBe('sk-operator-anthropic');
  });

  it('estimates the count for another model with the o200k_base tokenizer, without calling it', async () => {
    const system = 'You answer questions about the weather, briefly.';
    const messages = [
      { role: 'user' as const, content: 'What is the weather in Paris today?' },
      { role: 'assistant' as const, content: [{ type: 'text' as const, text: 'Sunny, 21 degrees.' }] },
      { role: 'user' as const, content: 'And tomorrow?' },
    ];
    const { data, response } = await anthropic()
      .messages.countTokens({ model: 'chat-only', system, messages })
      .withResponse();
    expect(response.headers.get('x-evalgate-token-count')).toBe('estimate');
    const texts = [
      system,
      ...messages.flatMap((m) => [m.role, typeof m.content === 'string' ? m.content : m.content[0]!.text]),
    ];
    const expected = 3 + 3 * messages.length + texts.reduce((n, t) => n + countTokens(t), 0);
    expect(data.input_tokens).toBe(expected);
    expect(g.mock.stats.requests).toBe(0);
    // More text, more tokens.
    const longer = await anthropic().messages.countTokens({
      model: 'chat-only',
      system,
      messages: [...messages, { role: 'user', content: 'And the day after, and the week after that?' }],
    });
    expect(longer.input_tokens).toBeGreaterThan(data.input_tokens);
  });

  it("answers the SDK's error classes in Anthropic's shape", async () => {
    const missing = await anthropic()
      .messages.countTokens({ model: 'chat-only' } as any)
      .catch((e) => e);
    expect(missing).toBeInstanceOf(Anthropic.BadRequestError);
    expect(missing.error).toMatchObject({ type: 'error', error: { type: 'invalid_request_error' } });
    expect(missing.error.error.message).toContain('messages');

    const unknown = await anthropic()
      .messages.countTokens({ model: 'no-such-model', messages: hi })
      .catch((e) => e);
    expect(unknown).toBeInstanceOf(Anthropic.NotFoundError);
    expect(unknown.error).toMatchObject({ type: 'error', error: { type: 'not_found_error' } });

    // Another project's key does not see this project's registered model.
    const elsewhere = await anthropic(other.key)
      .messages.countTokens({ model: 'chat-only', messages: hi })
      .catch((e) => e);
    expect(elsewhere).toBeInstanceOf(Anthropic.NotFoundError);

    const noKey = await anthropic('ek_not_a_key')
      .messages.countTokens({ model: 'chat-only', messages: hi })
      .catch((e) => e);
    expect(noKey).toBeInstanceOf(Anthropic.AuthenticationError);
    expect(noKey.error).toMatchObject({ type: 'error', error: { type: 'authentication_error' } });

    const readOnly = await g.h.key(['inference:read']);
    const refused = await anthropic(readOnly.key)
      .messages.countTokens({ model: 'chat-only', messages: hi })
      .catch((e) => e);
    expect(refused).toBeInstanceOf(Anthropic.PermissionDeniedError);
  });

  it('answers 502 when the upstream count is not one', async () => {
    g.mock.fail({ body: '{}', times: 10 });
    const err = await anthropic()
      .messages.countTokens({ model: 'anthropic/claude-haiku-4-5', messages: hi })
      .catch((e) => e);
    expect(err).toBeInstanceOf(Anthropic.APIError);
    expect(err.status).toBe(502);
    expect(err.error).toMatchObject({ type: 'error', error: { type: 'api_error' } });
  });
});

describe("Anthropic's shape on every path under /v1/messages", () => {
  it.each([
    ['POST', '/v1/messages/batches', 404],
    ['GET', '/v1/messages/nothing/here', 404],
    ['PUT', '/v1/messages', 405],
    ['GET', '/v1/messages/count_tokens', 405],
  ])('%s %s answers %i in it', async (method, path, status) => {
    const res = await g.h.call(method, path, { body: method === 'GET' ? undefined : {} });
    expect(res.status).toBe(status);
    expect(res.body).toEqual({
      type: 'error',
      error: { type: expect.any(String), message: expect.any(String) },
    });
  });

  it('keeps the envelope elsewhere', async () => {
    const res = await g.h.call('GET', '/v1/messagesx');
    expect(res.status).toBe(404);
    expect(res.body.error.code).toBe('not_found');
  });
});

describe("OpenAI's type and param on the OpenAI-dialect routes", () => {
  it('names the parameter at fault of an invalid chat request', async () => {
    const err = (await openai()
      .chat.completions.create({ model: 'chat-only', messages: [{ role: '', content: 'Hi' } as any] })
      .catch((e) => e)) as InstanceType<typeof OpenAI.APIError>;
    expect(err).toBeInstanceOf(OpenAI.BadRequestError);
    expect(err.type).toBe('invalid_request_error');
    expect(err.param).toBe('messages[0].role');
    expect(err.code).toBe('bad_request');
  });

  it.each([
    ['chat', () => openai().chat.completions.create({ model: 'no-such-model', messages: hi })],
    ['responses', () => openai().responses.create({ model: 'no-such-model', input: 'Hi' })],
    ['embeddings', () => openai().embeddings.create({ model: 'no-such-model', input: 'Hi' })],
  ])('sets type on a %s error (unknown model), with param null', async (_route, call) => {
    const err = (await call().catch((e) => e)) as InstanceType<typeof OpenAI.APIError>;
    expect(err).toBeInstanceOf(OpenAI.NotFoundError);
    expect(err.type).toBe('invalid_request_error');
    expect(err.param).toBeNull();
  });

  it('types authentication, permission and upstream failures', async () => {
    const noKey = (await openai('ek_not_a_key')
      .chat.completions.create({ model: 'chat-only', messages: hi })
      .catch((e) => e)) as InstanceType<typeof OpenAI.APIError>;
    expect(noKey).toBeInstanceOf(OpenAI.AuthenticationError);
    expect(noKey.type).toBe('authentication_error');
    const readOnly = await g.h.key(['inference:read']);
    const refused = (await openai(readOnly.key)
      .embeddings.create({ model: 'openai/text-embedding-3-small', input: 'Hi' })
      .catch((e) => e)) as InstanceType<typeof OpenAI.APIError>;
    expect(refused).toBeInstanceOf(OpenAI.PermissionDeniedError);
    expect(refused.type).toBe('permission_error');
    g.mock.fail({ status: 500, times: 10 });
    const down = (await openai()
      .chat.completions.create({ model: 'chat-only', messages: hi })
      .catch((e) => e)) as InstanceType<typeof OpenAI.APIError>;
    expect(down.status).toBe(503);
    expect(down.type).toBe('server_error');
  });

  it('leaves the service routes in the contract envelope', async () => {
    const res = await g.h.call('GET', '/v1/evaluators/evl_missing');
    expect(res.status).toBe(404);
    expect(Object.keys(res.body.error).sort()).toEqual(['code', 'details', 'message']);
  });
});
