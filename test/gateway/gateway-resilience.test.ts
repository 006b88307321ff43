import OpenAI, { type APIError } from 'openai';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { type Gateway, startGateway } from './gateway-helpers.js';

let g: Gateway;
const model = 'openai/gpt-4o-mini';
const hi = [{ role: 'user' as const, content: 'Hi' }];
const DEAD = 'http://127.0.0.1:9/v1';

beforeAll(async () => {
  // Anthropic is left disabled here, to see provider_not_configured.
  g = await startGateway({ ANTHROPIC_API_KEY: '', EVALGATE_UPSTREAM_RETRIES: '2' });
});
afterAll(async () => {
  await g.close();
});
beforeEach(() => {
  g.mock.reset();
  g.mock.set({ reply: () => 'Hello from the mock upstream.', latencyMs: 0, chunkDelayMs: 0 });
});

async function logOf(response: { headers: Headers } | undefined): Promise<any> {
  const id = response?.headers.get('x-evalgate-log-id');
  const log = (await g.logs('default')).find((l) => l.id === id);
  if (!log) throw new Error(`no log ${id}`);
  return log;
}

describe('upstream failures', () => {
  it('retries 5xx and dropped connections, then answers', async () => {
    g.mock.fail({ status: 503 }, { drop: 'before-headers' });
    const { data, response } = await g
      .client()
      .chat.completions.create({ model, messages: hi })
      .withResponse();
    expect(data.choices[0]!.message.content).toBe('Hello from the mock upstream.');
    expect(g.mock.stats.requests).toBe(3);
    expect((await logOf(response)).metadata).toMatchObject({ attempts: 3 });
  });

  it('answers 503 upstream_unavailable once the retries are exhausted', async () => {
    g.mock.fail({ status: 500, times: 3 });
    const err = (await g
      .client()
      .chat.completions.create({ model, messages: hi })
      .catch((e) => e)) as APIError;
    expect(err.status).toBe(503);
    expect(err.code).toBe('upstream_unavailable');
    expect(g.mock.stats.requests).toBe(3);
    const raw = await g.h.call('POST', '/v1/chat/completions', { body: { model, messages: hi } });
    expect(raw.status).toBe(200); // the failure queue is used up: the contract check ran on both
  });

  it('falls back to the models of X-Evalgate-Fallback-Models, then to the registry fallbacks', async () => {
    await g.h.call('POST', '/v1/models', { body: { label: 'dead-a', base_url: DEAD } });
    const viaHeader = g.client({ headers: { 'X-Evalgate-Fallback-Models': 'openai/gpt-4o' } });
    const { response } = await viaHeader.chat.completions
      .create({ model: 'dead-a', messages: hi })
      .withResponse();
    expect(g.mock.requests[0]!.body.model).toBe('gpt-4o');
    expect((await logOf(response)).metadata).toMatchObject({ served_by: 'openai/gpt-4o', attempts: 4 });

    await g.h.call('POST', '/v1/models', {
      body: { label: 'dead-b', base_url: DEAD, fallbacks: ['openai/gpt-4.1'] },
    });
    await g.client().chat.completions.create({ model: 'dead-b', messages: hi });
    expect(g.mock.requests[1]!.body.model).toBe('gpt-4.1');
  });

  it('passes an upstream 429 on as 429 rate_limit_exceeded with its Retry-After', async () => {
    g.mock.fail({ status: 429, retryAfter: 7, message: 'Rate limit reached for requests' });
    const err = (await g
      .client()
      .chat.completions.create({ model, messages: hi })
      .catch((e) => e)) as APIError;
    expect(err).toBeInstanceOf(OpenAI.RateLimitError);
    expect(err.headers?.get('retry-after')).toBe('7');
    expect(err.message).toContain('Rate limit reached for requests');
    expect(g.mock.stats.requests).toBe(1);
  });

  it('answers 400 provider_not_configured for a provider the operator did not enable', async () => {
    const res = await g.h.call('POST', '/v1/chat/completions', {
      body: { model: 'anthropic/claude-haiku-4-5', messages: hi },
    });
    expect(res.status).toBe(400);
    expect(res.body.error.code).toBe('provider_not_configured');
  });

  it('ends a stream that breaks after its first bytes with an error event', async () => {
    g.mock.set({ reply: () => 'a longer answer that will be cut short by the upstream' });
    g.mock.fail({ drop: 'mid-stream', afterChunks: 3 });
    const { data: stream, response } = await g
      .client()
      .chat.completions.create({ model, messages: hi, stream: true })
      .withResponse();
    let text = '';
    const err = await (async () => {
      for await (const chunk of stream) text += chunk.choices[0]?.delta?.content ?? '';
    })().catch((e) => e);
    expect(err).toBeInstanceOf(OpenAI.APIError);
    expect(text.length).toBeGreaterThan(0);
    const log = await logOf(response);
    expect(log).toMatchObject({ status: 'error', error: { code: 'upstream_unavailable' } });
  });
});

describe('client aborts', () => {
  it('cancels the upstream stream at once when the client goes away', async () => {
    g.mock.set({ reply: () => 'word '.repeat(200), chunkDelayMs: 50 });
    const controller = new AbortController();
    const { data: stream, response } = await g
      .client()
      .chat.completions.create({ model, messages: hi, stream: true }, { signal: controller.signal })
      .withResponse();
    const started = Date.now();
    for await (const _chunk of stream) {
      controller.abort();
      break;
    }
    await g.mock.until(() => g.mock.stats.clientClosed === 1);
    expect(Date.now() - started).toBeLessThan(1_000); // 200 chunks at 50 ms would take 10 s
    const log = await logOf(response);
    expect(log).toMatchObject({ status: 'error', error: { code: 'client_disconnected' } });
  });

  it('cancels a pending non-streamed upstream request when the client goes away', async () => {
    g.mock.fail({ hang: true });
    const controller = new AbortController();
    const pending = g
      .client()
      .chat.completions.create({ model, messages: hi }, { signal: controller.signal });
    await g.mock.until(() => g.mock.stats.requests === 1);
    controller.abort();
    await expect(pending).rejects.toBeInstanceOf(OpenAI.APIUserAbortError);
    await g.mock.until(() => g.mock.stats.clientClosed === 1);
  });
});
