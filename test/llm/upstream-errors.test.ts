// Database-independent: what an upstream's failure means is decided from its status, headers and body.
import { describe, expect, it } from 'vitest';
import { openAiCompatible } from '../../src/llm/providers/openai-compatible.js';
import {
  CallAbortedError,
  rateLimitRetryMs,
  retryAfterSeconds,
  transportFailure,
  UpstreamError,
  upstreamHttpError,
} from '../../src/llm/upstream-errors.js';
import { modelAt } from './layer-helpers.js';

const model = modelAt('http://127.0.0.1:9/v1');
const openAiError = (message: string) =>
  JSON.stringify({ error: { message, type: 'invalid_request_error' } });

describe('retryAfterSeconds', () => {
  it('reads seconds, an HTTP date or retry-after-ms, rounding up to at least 1 s', () => {
    expect(retryAfterSeconds({ 'retry-after': '7' })).toBe(7);
    expect(retryAfterSeconds({ 'retry-after': ' 2.1 ' })).toBe(3);
    expect(retryAfterSeconds({ 'retry-after': '0' })).toBe(1);
    const inTen = new Date(Date.now() + 10_500).toUTCString();
    expect(retryAfterSeconds({ 'retry-after': inTen })).toBeGreaterThanOrEqual(9);
    expect(retryAfterSeconds({ 'retry-after': inTen })).toBeLessThanOrEqual(11);
    expect(retryAfterSeconds({ 'retry-after': new Date(Date.now() - 60_000).toUTCString() })).toBe(1);
    expect(retryAfterSeconds({ 'retry-after-ms': '2500' })).toBe(3);
    expect(retryAfterSeconds({})).toBe(1);
    expect(retryAfterSeconds({ 'retry-after': 'soon' })).toBe(1);
  });
});

describe('upstreamHttpError', () => {
  it('retries 5xx (but 508) and 408', () => {
    for (const status of [500, 502, 503, 504, 408]) {
      const e = upstreamHttpError(openAiCompatible, model, status, {}, 'oops');
      expect(e.kind).toBe('retryable');
      expect(e.code).toBe('upstream_unavailable');
      expect(e.details).toEqual({ reason: `upstream status ${status}`, upstream_status: status });
    }
  });

  it("turns a 429 into rate_limited with the upstream's wait and message", () => {
    const e = upstreamHttpError(
      openAiCompatible,
      model,
      429,
      { 'retry-after': '4' },
      openAiError('slow down'),
    );
    expect(e.kind).toBe('rate_limited');
    expect(e.code).toBe('rate_limit_exceeded');
    expect(e.status).toBe(429);
    expect(e.message).toBe('slow down');
    expect(e.headers).toEqual({ 'Retry-After': '4' });
    expect(e.retryAfterMs).toBe(4000);
    expect(e.details).toMatchObject({ upstream_status: 429, retry_after: 4, model: 'mock-gpt' });
    expect(rateLimitRetryMs(e)).toBe(4000);
    const bare = upstreamHttpError(openAiCompatible, model, 429, {}, '{}');
    expect(bare.message).toBe('The upstream provider is rate limiting; retry in 1 s');
  });

  it.each([
    [404, 'model_not_found'],
    [508, 'loop_detected'],
    [413, 'payload_too_large'],
    [400, 'bad_request'],
    [401, 'bad_request'],
  ])('does not retry a %i: %s', (status, code) => {
    const e = upstreamHttpError(openAiCompatible, model, status, {}, openAiError('no such thing'));
    expect(e.kind).toBe('fatal');
    expect(e.code).toBe(code);
    expect(e.message).toBe('no such thing');
    expect(e.upstreamStatus).toBe(status);
    expect(rateLimitRetryMs(e)).toBeNull();
  });

  it('says the status when the body carries no message', () => {
    expect(upstreamHttpError(openAiCompatible, model, 400, {}, '{}').message).toBe(
      'The upstream provider answered 400',
    );
  });
});

describe('transportFailure', () => {
  it('is an abort when the caller went away, whatever failed', () => {
    const controller = new AbortController();
    controller.abort();
    expect(transportFailure(new Error('ECONNRESET'), controller.signal)).toBeInstanceOf(CallAbortedError);
  });

  it('retries a connection error, naming its code, and passes API errors through', () => {
    const reset = Object.assign(new Error('socket hang up'), { code: 'ECONNRESET' });
    const e = transportFailure(reset, undefined) as UpstreamError;
    expect(e.kind).toBe('retryable');
    expect(e.reason).toBe('ECONNRESET');
    expect((transportFailure('weird', undefined) as UpstreamError).reason).toBe('connection error');
    const invalid = UpstreamError.invalidAnswer('no choices', 'x'.repeat(600));
    expect(transportFailure(invalid, undefined)).toBe(invalid);
    expect(invalid.upstreamMessage).toHaveLength(500);
  });

  it('waits at least 100 ms before asking again after a 429', () => {
    const e = new UpstreamError('rate_limited', 'rate_limit_exceeded', 'x', null, {}, 10);
    expect(rateLimitRetryMs(e)).toBe(100);
    expect(rateLimitRetryMs(new UpstreamError('rate_limited', 'rate_limit_exceeded', 'x'))).toBe(1000);
    expect(rateLimitRetryMs(new Error('x'))).toBeNull();
  });
});
