// Database-independent: the dialects' checks of malformed upstream answers; recording goes through the same log writer that test/capture runs on both databases.
import Anthropic from '@anthropic-ai/sdk';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { type Gateway, startGateway } from './gateway-helpers.js';

/*
 * An upstream that answers 200 with something that is not an answer of its dialect: a 200 carrying
 * `{"error":…}`, `{}`, `choices: []`, a stream of only an error event, `{"foo":1}` or a bare `[DONE]`,
 * an Anthropic stream with no `message_start`. Each is an upstream error: the client gets 502 in its
 * dialect with the upstream's message in the details, the task log says `error`, retries and fallbacks
 * treat it as a failure.
 */

let g: Gateway;
const hi = [{ role: 'user' as const, content: 'Hi' }];
/** Every attempt of a call (EVALGATE_UPSTREAM_RETRIES=1: two per model). */
const ALL = 10;

beforeAll(async () => {
  g = await startGateway({ EVALGATE_UPSTREAM_RETRIES: '1' });
  const res = await g.h.call('POST', '/v1/models', {
    body: { label: 'chat-only', base_url: g.mock.baseUrl, upstream_model: 'chat-only-upstream' },
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

async function logOf(id: string | null | undefined): Promise<any> {
  const log = (await g.logs('default')).find((l) => l.id === id);
  if (!log) throw new Error(`no log ${id}`);
  return log;
}

const errorBody = JSON.stringify({ error: { message: 'quota exhausted upstream', type: 'server_error' } });
const plainLies: [string, string, string | null][] = [
  ['an error object', errorBody, 'quota exhausted upstream'],
  ['an empty object', '{}', null],
  ['no choices', JSON.stringify({ id: 'x', object: 'chat.completion', choices: [] }), null],
];
const streamLies: [string, string[], string | null][] = [
  ['only an error event', [errorBody], 'quota exhausted upstream'],
  ['an object that is not a chunk', ['{"foo":1}'], null],
  ['a bare [DONE]', ['[DONE]'], null],
];

describe.each([
  ['a chat upstream', 'chat-only'],
  ['a frontier model', 'openai/gpt-4o-mini'],
])('/v1/chat/completions to %s', (_name, model) => {
  it.each(plainLies)('answers 502 for %s and logs an error', async (_what, body, said) => {
    g.mock.fail({ body, times: ALL });
    const res = await g.h.call('POST', '/v1/chat/completions', { body: { model, messages: hi } });
    expect(res.status).toBe(502);
    expect(res.body.error.code).toBe('upstream_error');
    expect(res.body.error.type).toBe('server_error');
    if (said) expect(res.body.error.details.upstream_message).toBe(said);
    // Retried like a 5xx: both attempts of the model were made.
    expect(g.mock.stats.requests).toBe(2);
    const log = await logOf(res.headers.get('x-evalgate-log-id'));
    expect(log).toMatchObject({ status: 'error', error: { code: 'upstream_error' } });
  });

  it.each(streamLies)('answers 502 for a stream of %s and logs an error', async (_what, events, said) => {
    g.mock.fail({ events, times: ALL });
    const res = await g.h.call('POST', '/v1/chat/completions', {
      body: { model, messages: hi, stream: true },
    });
    expect(res.status).toBe(502);
    expect(res.body.error.code).toBe('upstream_error');
    if (said) expect(res.body.error.details.upstream_message).toBe(said);
    const log = await logOf(res.headers.get('x-evalgate-log-id'));
    expect(log).toMatchObject({ status: 'error', error: { code: 'upstream_error' } });
  });
});

describe('retries and fallbacks', () => {
  it('answers once a retry brings a real completion', async () => {
    g.mock.fail({ body: '{}' });
    const res = await g.h.call('POST', '/v1/chat/completions', {
      body: { model: 'chat-only', messages: hi },
    });
    expect(res.status).toBe(200);
    expect(res.body.choices[0].message.content).toBe('Hello from the mock upstream.');
    expect(g.mock.stats.requests).toBe(2);
  });

  it('falls back to the next model when the first only lies', async () => {
    g.mock.fail({ body: errorBody, times: ALL, match: (r) => r.body.model === 'chat-only-upstream' });
    const res = await g.h.call('POST', '/v1/chat/completions', {
      body: { model: 'chat-only', messages: hi },
      headers: { 'x-evalgate-fallback-models': 'openai/gpt-4o-mini' },
    });
    expect(res.status).toBe(200);
    expect(res.body.choices[0].message.content).toBe('Hello from the mock upstream.');
    const log = await logOf(res.headers.get('x-evalgate-log-id'));
    expect(log.status).toBe('success');
    expect(log.metadata).toMatchObject({ served_by: 'openai/gpt-4o-mini', attempts: 3 });
  });
});

describe('/v1/responses', () => {
  it.each([
    ['a Responses upstream', 'openai/gpt-4o-mini', '{}'],
    ['a Responses upstream', 'openai/gpt-4o-mini', errorBody],
    ['a Responses upstream', 'openai/gpt-4o-mini', JSON.stringify({ object: 'response', status: 'failed' })],
    ['a chat upstream', 'chat-only', '{}'],
    ['a chat upstream', 'chat-only', errorBody],
    ['a chat upstream', 'chat-only', JSON.stringify({ choices: [] })],
  ])('answers 502 when %s (%s) answers %s', async (_name, model, body) => {
    g.mock.fail({ body, times: ALL });
    const res = await g.h.call('POST', '/v1/responses', { body: { model, input: 'Hi' } });
    expect(res.status).toBe(502);
    expect(res.body.error).toMatchObject({ code: 'upstream_error', type: 'server_error' });
    const log = await logOf(res.headers.get('x-evalgate-log-id'));
    expect(log).toMatchObject({ status: 'error', error: { code: 'upstream_error' } });
  });

  it.each([
    ['openai/gpt-4o-mini', [errorBody]],
    ['openai/gpt-4o-mini', ['{"foo":1}']],
    ['openai/gpt-4o-mini', ['[DONE]']],
    ['chat-only', [errorBody]],
    ['chat-only', ['[DONE]']],
  ])('answers 502 when a stream of %s is %j', async (model, events) => {
    g.mock.fail({ events, times: ALL });
    const res = await g.h.call('POST', '/v1/responses', { body: { model, input: 'Hi', stream: true } });
    expect(res.status).toBe(502);
    expect(res.body.error.code).toBe('upstream_error');
  });
});

describe('/v1/messages', () => {
  const client = () => new Anthropic({ baseURL: g.h.url, apiKey: g.h.admin.key, maxRetries: 0 });
  const overloaded = JSON.stringify({
    type: 'error',
    error: { type: 'overloaded_error', message: 'Overloaded upstream' },
  });
  const noStart = [
    'event: content_block_delta\ndata: {"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Hi"}}',
    'event: message_delta\ndata: {"type":"message_delta","delta":{"stop_reason":"end_turn"},"usage":{"output_tokens":1}}',
    'event: message_stop\ndata: {"type":"message_stop"}',
  ];

  it.each([
    ['anthropic/claude-haiku-4-5', '{}', null],
    ['anthropic/claude-haiku-4-5', overloaded, 'Overloaded upstream'],
    ['anthropic/claude-haiku-4-5', JSON.stringify({ type: 'message', content: [] }), null],
    ['chat-only', errorBody, 'quota exhausted upstream'],
    ['chat-only', JSON.stringify({ choices: [] }), null],
  ])('answers 502 in Anthropic shape when %s answers %s', async (model, body, said) => {
    g.mock.fail({ body, times: ALL });
    const err = (await client()
      .messages.create({ model, max_tokens: 20, messages: hi })
      .catch((e) => e)) as InstanceType<typeof Anthropic.APIError>;
    expect(err).toBeInstanceOf(Anthropic.APIError);
    expect(err.status).toBe(502);
    expect(err.error).toMatchObject({ type: 'error', error: { type: 'api_error' } });
    if (said) expect((err.error as any).error.message).toContain(said);
    const log = await logOf(err.headers?.get('x-evalgate-log-id'));
    expect(log).toMatchObject({ status: 'error', error: { code: 'upstream_error' } });
  });

  it.each([
    ['a stream with no message_start', noStart],
    ['a stream of only an error event', [`event: error\ndata: ${overloaded}`]],
    ['a stream of {"foo":1}', ['{"foo":1}']],
    ['a bare [DONE]', ['[DONE]']],
  ])('answers 502 for %s from an Anthropic upstream', async (_what, events) => {
    g.mock.fail({ events, times: ALL });
    const err = (await client()
      .messages.create({ model: 'anthropic/claude-haiku-4-5', max_tokens: 20, messages: hi, stream: true })
      .catch((e) => e)) as InstanceType<typeof Anthropic.APIError>;
    expect(err).toBeInstanceOf(Anthropic.APIError);
    expect(err.status).toBe(502);
    const log = await logOf(err.headers?.get('x-evalgate-log-id'));
    expect(log).toMatchObject({ status: 'error', error: { code: 'upstream_error' } });
  });
});

describe('/v1/embeddings', () => {
  it('answers 502 for an answer without embeddings', async () => {
    g.mock.fail({ body: errorBody, times: ALL });
    const res = await g.h.call('POST', '/v1/embeddings', {
      body: { model: 'openai/text-embedding-3-small', input: 'Hi' },
    });
    expect(res.status).toBe(502);
    expect(res.body.error).toMatchObject({
      code: 'upstream_error',
      details: { upstream_message: 'quota exhausted upstream' },
    });
  });
});
