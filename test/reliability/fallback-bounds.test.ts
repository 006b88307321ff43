import type { APIError } from 'openai';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { MAX_ATTEMPTS_PER_CALL, MAX_MODELS_PER_CALL } from '../../src/llm/resilience.js';
import { type Gateway, startGateway } from '../gateway/gateway-helpers.js';

const hi = [{ role: 'user' as const, content: 'Hi' }];
const model = 'openai/gpt-4o-mini';

describe('fallbacks are bounded', () => {
  let g: Gateway;
  beforeAll(async () => {
    g = await startGateway({ EVALGATE_UPSTREAM_RETRIES: '2' });
  });
  afterAll(async () => {
    await g.close();
  });
  beforeEach(() => {
    g.mock.reset();
    g.mock.fail({ status: 500, times: 100_000 });
  });

  it('tries a model named 50 times in X-Evalgate-Fallback-Models once: 3 upstream calls, not 153', async () => {
    const started = Date.now();
    const err = (await g
      .client({ headers: { 'X-Evalgate-Fallback-Models': Array(50).fill(model).join(',') } })
      .chat.completions.create({ model, messages: hi })
      .catch((e) => e)) as APIError;
    expect(err.status).toBe(503);
    expect(err.code).toBe('upstream_unavailable');
    // One model, its first attempt and two retries.
    expect(g.mock.stats.requests).toBe(3);
    expect(Date.now() - started).toBeLessThan(5000);
  });

  it('tries at most 8 distinct models and 10 attempts from 50 distinct fallbacks', async () => {
    const fallbacks = Array.from({ length: 50 }, (_, i) => `openai/gpt-fallback-${i}`);
    const err = (await g
      .client({ headers: { 'X-Evalgate-Fallback-Models': fallbacks.join(',') } })
      .chat.completions.create({ model, messages: hi })
      .catch((e) => e)) as APIError;
    expect(err.status).toBe(503);
    expect(g.mock.stats.requests).toBe(MAX_ATTEMPTS_PER_CALL);
    const models = new Set(g.mock.requests.map((r) => r.body.model));
    expect(models.size).toBeLessThanOrEqual(MAX_MODELS_PER_CALL);
    expect(MAX_ATTEMPTS_PER_CALL).toBe(10);
    expect(MAX_MODELS_PER_CALL).toBe(8);
  });

  it('drops duplicates from registry fallbacks too', async () => {
    const reg = await g.h.call('POST', '/v1/models', {
      body: {
        label: 'flaky',
        base_url: g.mock.baseUrl,
        upstream_model: 'flaky-upstream',
        fallbacks: ['openai/gpt-4o', 'openai/gpt-4o', 'openai/gpt-4o'],
      },
    });
    expect(reg.status, reg.text).toBe(201);
    const err = (await g
      .client()
      .chat.completions.create({ model: 'flaky', messages: hi })
      .catch((e) => e)) as APIError;
    expect(err.status).toBe(503);
    // flaky (3 attempts) then gpt-4o once as a model (3 attempts).
    expect(g.mock.stats.requests).toBe(6);
    expect(g.mock.requests.map((r) => r.body.model)).toEqual([
      'flaky-upstream',
      'flaky-upstream',
      'flaky-upstream',
      'gpt-4o',
      'gpt-4o',
      'gpt-4o',
    ]);
  });
});

describe("a call's attempts count against its key's rate limit", () => {
  let g: Gateway;
  beforeAll(async () => {
    g = await startGateway({
      EVALGATE_UPSTREAM_RETRIES: '2',
      EVALGATE_RATE_LIMIT_PER_MINUTE: '6',
      EVALGATE_RATE_LIMIT_BURST: '6',
    });
  });
  afterAll(async () => {
    await g.close();
  });

  it('stops retrying once the key has spent its budget, answering 429', async () => {
    g.mock.fail({ status: 500, times: 100_000 });
    const key = await g.h.key(['*']);
    const fallbacks = ['openai/a', 'openai/b', 'openai/c'];
    const err = (await g
      .client({ key: key.key, headers: { 'X-Evalgate-Fallback-Models': fallbacks.join(',') } })
      .chat.completions.create({ model, messages: hi })
      .catch((e) => e)) as APIError;
    // The request took one unit of the burst of 6; each attempt after the first took one more.
    expect(g.mock.stats.requests).toBe(6);
    expect(err.status).toBe(429);
    expect(err.code).toBe('rate_limit_exceeded');
    // The budget is spent for the next request too.
    const next = (await g
      .client({ key: key.key })
      .chat.completions.create({ model, messages: hi })
      .catch((e) => e)) as APIError;
    expect(next.status).toBe(429);
  });
});
