// Database-independent: the cache key is a pure function of the project, the model and the request.
import { describe, expect, it } from 'vitest';
import { cacheKey, canonicalJson, IGNORED_FIELDS } from '../../src/llm/cache/key.js';
import type { ChatRequest } from '../../src/llm/types.js';
import { modelAt } from './layer-helpers.js';

const model = modelAt('http://127.0.0.1:9/v1');
const ask = (extra: Partial<ChatRequest> = {}): ChatRequest => ({
  model: 'mock-gpt',
  messages: [{ role: 'user', content: 'hello' }],
  ...extra,
});

describe('canonicalJson', () => {
  it('sorts object keys at every depth and leaves undefined members out', () => {
    expect(canonicalJson({ b: 1, a: { d: [1, { z: 1, y: 2 }], c: undefined } })).toBe(
      '{"a":{"d":[1,{"y":2,"z":1}]},"b":1}',
    );
  });

  it('writes undefined array members and a bare undefined as null', () => {
    expect(canonicalJson([1, undefined, 'x'])).toBe('[1,null,"x"]');
    expect(canonicalJson(undefined)).toBe('null');
    expect(canonicalJson(null)).toBe('null');
  });

  it('gives the same text for objects that differ only in key order', () => {
    expect(canonicalJson({ x: 1, y: [2, 3] })).toBe(canonicalJson({ y: [2, 3], x: 1 }));
  });
});

describe('cacheKey', () => {
  const base = cacheKey('p1', model, 'chat', ask());

  it('is a SHA-256 hex digest, the same for the same call', () => {
    expect(base).toMatch(/^[0-9a-f]{64}$/);
    expect(cacheKey('p1', model, 'chat', ask())).toBe(base);
  });

  it('ignores how the answer is delivered, who asked and the model name as written', () => {
    expect(IGNORED_FIELDS).toEqual(['model', 'stream', 'stream_options', 'user', 'metadata', 'store']);
    const noisy = ask({
      model: 'another-alias',
      stream: true,
      stream_options: { include_usage: true },
      user: 'u-1',
      metadata: { k: 'v' },
      store: true,
    } as Partial<ChatRequest>);
    expect(cacheKey('p1', model, 'chat', noisy)).toBe(base);
  });

  it('changes with anything that changes the answer', () => {
    expect(cacheKey('p1', model, 'chat', ask({ temperature: 0.5 }))).not.toBe(base);
    expect(cacheKey('p1', model, 'chat', ask({ messages: [{ role: 'user', content: 'bye' }] }))).not.toBe(
      base,
    );
  });

  it('never shares a key between projects, models, upstreams or kinds of answer', () => {
    const keys = new Set([
      base,
      cacheKey('p2', model, 'chat', ask()),
      cacheKey('p1', { ...model, upstreamModel: 'other-model' }, 'chat', ask()),
      cacheKey('p1', { ...model, baseUrl: 'http://127.0.0.1:10/v1' }, 'chat', ask()),
      cacheKey('p1', { ...model, modelId: 'mdl_1' }, 'chat', ask()),
      cacheKey('p1', model, 'responses', ask()),
    ]);
    expect(keys.size).toBe(6);
  });

  it("applies the model's default parameters to chat calls before keying them", () => {
    const withDefaults = { ...model, defaultParameters: { temperature: 0.2 } };
    expect(cacheKey('p1', withDefaults, 'chat', ask())).toBe(
      cacheKey('p1', model, 'chat', ask({ temperature: 0.2 })),
    );
    // A value the request sets wins over the default.
    expect(cacheKey('p1', withDefaults, 'chat', ask({ temperature: 0.9 }))).toBe(
      cacheKey('p1', model, 'chat', ask({ temperature: 0.9 })),
    );
    // Other kinds of answer are keyed on the request as sent.
    expect(cacheKey('p1', withDefaults, 'responses', ask())).toBe(cacheKey('p1', model, 'responses', ask()));
  });
});
