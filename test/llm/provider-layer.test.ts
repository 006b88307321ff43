// Database-independent: the provider layer against a loopback upstream, no store.
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { assembleCompletion } from '../../src/llm/assemble.js';
import { CallAbortedError, type ProviderLayer } from '../../src/llm/provider-layer.js';
import { completionText } from '../../src/llm/providers/openai-compatible.js';
import { ssePayloads } from '../../src/llm/sse.js';
import { ApiError } from '../../src/shared/errors.js';
import { type MockUpstream, startMockUpstream } from '../fixtures/mock-upstream.js';
import { drain, layerFor, modelAt } from './layer-helpers.js';

let mock: MockUpstream;
let layer: ProviderLayer;
const ask = { model: 'mock-gpt', messages: [{ role: 'user', content: 'Hi' }] };

beforeAll(async () => {
  mock = await startMockUpstream();
  layer = layerFor({ resolve: (slug) => modelAt(mock.baseUrl, { slug, upstreamModel: `${slug}-upstream` }) });
});
afterAll(async () => {
  await layer.close();
  await mock.close();
});
beforeEach(() => {
  mock.reset();
  mock.set({ latencyMs: 0, chunkDelayMs: 0, reply: () => 'Hello from the mock upstream.' });
});

async function rejection(promise: Promise<unknown>): Promise<unknown> {
  return promise.then(
    () => {
      throw new Error('expected a rejection');
    },
    (err: unknown) => err,
  );
}

describe('provider layer (plain function)', () => {
  it('completes a call and prices it from the model', async () => {
    const result = await layer.complete(modelAt(mock.baseUrl), ask);
    expect(result.text).toBe('Hello from the mock upstream.');
    expect(result.usage).toMatchObject({ prompt_tokens: 12, completion_tokens: 7, total_tokens: 19 });
    expect(result.cost).toBeCloseTo((12 * 2 + 7 * 10) / 1e6, 12);
    expect(result.servedBy).toBe('mock-gpt');
    expect(mock.requests[0]!.body.model).toBe('mock-model');
    expect(mock.requests[0]!.headers.authorization).toBe('Bearer sk-test');
  });

  it("keeps an operator model's answer bytes as sent, and names a registered model as the caller did", async () => {
    const frontier = await layer.complete(modelAt(mock.baseUrl), ask);
    // The mock names the model it was given (the upstream's own name): kept, byte for byte.
    expect(JSON.parse(frontier.bodyText).model).toBe('mock-model');
    expect(frontier.body.model).toBe('mock-model');
    const registered = await layer.complete(
      modelAt(mock.baseUrl, { slug: 'local-good', modelId: 'mdl_1' }),
      ask,
    );
    expect(registered.body.model).toBe('local-good');
    // The renamed answer's text is the renamed body, the same on every read and in a copy of the result.
    expect(registered.bodyText).toBe(JSON.stringify(registered.body));
    expect(JSON.parse(registered.bodyText)).toMatchObject({
      model: 'local-good',
      choices: frontier.body.choices,
    });
    expect(registered.bodyText).toBe(registered.bodyText);
    expect({ ...registered }.bodyText).toBe(registered.bodyText);
  });

  it('applies the model default parameters under the request', async () => {
    const model = modelAt(mock.baseUrl, {
      defaultParameters: { temperature: 0.1, seed: 7, system: 'Be brief.' },
    });
    await layer.complete(model, { ...ask, temperature: 0.9 });
    const sent = mock.requests[0]!.body;
    expect(sent).toMatchObject({ temperature: 0.9, seed: 7 });
    expect(sent.messages[0]).toEqual({ role: 'system', content: 'Be brief.' });
  });

  it('streams chunks, asks the upstream for usage and drops that chunk when the caller did not ask', async () => {
    const stream = await layer.stream(modelAt(mock.baseUrl), { ...ask, stream: true }, { collect: true });
    const { chunks, done } = await drain(stream);
    expect(done).toBe(true);
    expect(mock.requests[0]!.body.stream_options).toEqual({ include_usage: true });
    expect(chunks.every((c) => c.choices.length > 0)).toBe(true);
    const result = stream.result();
    expect(completionText(assembleCompletion(ssePayloads(result.sse), 'x'))).toBe(
      'Hello from the mock upstream.',
    );
    expect(result.usage).toMatchObject({ prompt_tokens: 12, completion_tokens: 7 });
    expect(result.error).toBeNull();

    const withUsage = await layer.stream(modelAt(mock.baseUrl), {
      ...ask,
      stream: true,
      stream_options: { include_usage: true },
    });
    const second = await drain(withUsage);
    expect(second.chunks.at(-1)).toMatchObject({ choices: [], usage: { total_tokens: 19 } });
  });

  it('retries 5xx and dropped connections with back-off', async () => {
    mock.fail({ status: 503, times: 1 }, { drop: 'before-headers' });
    const result = await layer.complete(modelAt(mock.baseUrl), ask);
    expect(result.attempts).toBe(3);
    expect(result.text).toBe('Hello from the mock upstream.');
  });

  it('answers 503 upstream_unavailable once retries are exhausted', async () => {
    mock.fail({ status: 500, times: 3 });
    const err = await rejection(layer.complete(modelAt(mock.baseUrl), ask));
    expect(err).toBeInstanceOf(ApiError);
    expect((err as ApiError).status).toBe(503);
    expect((err as ApiError).details?.attempts).toHaveLength(3);
    expect(mock.stats.requests).toBe(3);
  });

  it('falls back to the next model when one is unavailable', async () => {
    const dead = modelAt('http://127.0.0.1:9/v1', { slug: 'dead', fallbacks: ['backup'] });
    const result = await layer.complete(dead, ask, { projectId: 'prj_x' });
    expect(result.servedBy).toBe('backup');
    expect(mock.requests[0]!.body.model).toBe('backup-upstream');
    // A caller-given list replaces the model's own.
    mock.fail({ status: 502, times: 3 });
    const viaOverride = await layer.complete(modelAt(mock.baseUrl), ask, {
      fallbacks: ['other'],
      resolveFallback: async (slug) => modelAt(mock.baseUrl, { slug }),
    });
    expect(viaOverride.servedBy).toBe('other');
  });

  it('passes an upstream 429 on with its Retry-After, without retrying', async () => {
    mock.fail({ status: 429, retryAfter: 7, message: 'slow down' });
    const err = (await rejection(layer.complete(modelAt(mock.baseUrl), ask))) as ApiError;
    expect(err.code).toBe('rate_limit_exceeded');
    expect(err.headers['Retry-After']).toBe('7');
    expect(err.message).toBe('slow down');
    expect(mock.stats.requests).toBe(1);
  });

  it('maps upstream 4xx to our codes with the upstream message', async () => {
    const cases: [number, string][] = [
      [400, 'bad_request'],
      [401, 'bad_request'],
      [404, 'model_not_found'],
      [422, 'bad_request'],
    ];
    for (const [status, code] of cases) {
      mock.fail({ status, message: `upstream says ${status}` });
      const err = (await rejection(layer.complete(modelAt(mock.baseUrl), ask))) as ApiError;
      expect(err.code).toBe(code);
      expect(err.message).toBe(`upstream says ${status}`);
      expect(err.details?.upstream_status).toBe(status);
    }
  });

  it('aborts the upstream request when the caller aborts', async () => {
    mock.fail({ hang: true });
    const controller = new AbortController();
    const pending = rejection(layer.complete(modelAt(mock.baseUrl), ask, { signal: controller.signal }));
    await mock.until(() => mock.stats.requests === 1);
    controller.abort();
    expect(await pending).toBeInstanceOf(CallAbortedError);
    await mock.until(() => mock.stats.clientClosed === 1);
  });

  it('ends a stream that breaks mid-way with an error event', async () => {
    mock.set({ reply: () => 'a long answer that is cut off in the middle' });
    mock.fail({ drop: 'mid-stream', afterChunks: 2 });
    const stream = await layer.stream(modelAt(mock.baseUrl), { ...ask, stream: true }, { collect: true });
    const { text } = await drain(stream).catch(() => ({ text: 'threw' }));
    expect(text).toContain('"error":{"code":"upstream_unavailable"');
    expect(stream.result().error?.code).toBe('upstream_unavailable');
  });

  it('refuses a connection the address policy forbids, whatever DNS says', async () => {
    const strict = layerFor({ addressCheck: () => false });
    try {
      const err = (await rejection(
        strict.complete(
          modelAt(`${mock.url.replace('127.0.0.1', 'localhost')}/v1`, { checkAddress: true }),
          ask,
        ),
      )) as ApiError;
      expect(err.code).toBe('bad_request');
      expect(err.details).toMatchObject({ reason: 'upstream_address_blocked' });
      const literal = (await rejection(
        strict.complete(modelAt(mock.baseUrl, { checkAddress: true }), ask),
      )) as ApiError;
      expect(literal.details).toMatchObject({ reason: 'upstream_address_blocked' });
      expect(mock.stats.requests).toBe(0);
    } finally {
      await strict.close();
    }
  });
});
