import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { gcra } from '../../src/ratelimit/limiter.js';
import { createMemoryLimiter } from '../../src/ratelimit/memory.js';
import { type Harness, startHarness } from '../helpers/harness.js';

const REDIS_URL = process.env.EVALGATE_TEST_REDIS_URL ?? 'redis://127.0.0.1:6379';
// 6 per minute: one request every 10 s refills the budget, so a test never sees a refill by accident.
const LIMITS = { EVALGATE_RATE_LIMIT_PER_MINUTE: '6', EVALGATE_RATE_LIMIT_BURST: '5' };

describe('gcra()', () => {
  const params = { rate: 60, periodMs: 60_000, burst: 5 }; // one request per second, bursts of 5

  /** Runs `count` requests at time `at` from the stored arrival time; returns the decisions and the new state. */
  function burst(tat: number | null, at: number, count: number) {
    const decisions = [];
    for (let i = 0; i < count; i++) {
      const step = gcra(params, tat, at);
      decisions.push(step.decision);
      if (step.tat !== null) tat = step.tat;
    }
    return { decisions, tat };
  }

  it('allows a full burst, counting down remaining, then refuses with an exact Retry-After', () => {
    const t0 = 1_700_000_000_000;
    const { decisions, tat } = burst(null, t0, 6);
    expect(decisions.map((d) => d.allowed)).toEqual([true, true, true, true, true, false]);
    expect(decisions.map((d) => d.remaining)).toEqual([4, 3, 2, 1, 0, 0]);
    expect(decisions.every((d) => d.limit === 5)).toBe(true);
    expect(decisions.slice(0, 5).map((d) => d.retryAfter)).toEqual([0, 0, 0, 0, 0]);
    expect(decisions[5]).toMatchObject({ allowed: false, retryAfter: 1, resetAt: (t0 + 5000) / 1000 });
    expect(decisions[4]!.resetAt).toBe((t0 + 5000) / 1000);
    expect(tat).toBe(t0 + 5000);
    // A refusal does not spend: the state stays where it was.
    expect(gcra(params, tat, t0 + 10).tat).toBeNull();
    expect(gcra(params, tat, t0 + 250).decision.retryAfter).toBe(1);
  });

  it('replenishes one request per interval, and fully after the window', () => {
    const t0 = 1_000_000;
    const { tat } = burst(null, t0, 5);
    expect(gcra(params, tat, t0 + 999).decision.allowed).toBe(false);
    const later = gcra(params, tat, t0 + 1000);
    expect(later.decision).toMatchObject({ allowed: true, remaining: 0 });
    const twoLater = burst(tat, t0 + 2000, 3);
    expect(twoLater.decisions.map((d) => d.allowed)).toEqual([true, true, false]);
    expect(twoLater.decisions[1]!.remaining).toBe(0);
    const rested = burst(tat, t0 + 60_000, 6);
    expect(rested.decisions.map((d) => d.remaining)).toEqual([4, 3, 2, 1, 0, 0]);
  });

  it('computes Retry-After in whole seconds, rounded up, for slow rates', () => {
    const slow = { rate: 6, periodMs: 60_000, burst: 2 }; // one per 10 s
    let tat: number | null = null;
    for (let i = 0; i < 2; i++) tat = gcra(slow, tat, 0).tat;
    expect(gcra(slow, tat, 0).decision.retryAfter).toBe(10);
    expect(gcra(slow, tat, 2500).decision.retryAfter).toBe(8);
    expect(gcra(slow, tat, 9999).decision.retryAfter).toBe(1);
    expect(gcra(slow, tat, 10_000).decision.allowed).toBe(true);
  });

  it('keeps one budget per key in the memory limiter', async () => {
    let now = 0;
    const limiter = createMemoryLimiter(params, () => now);
    for (let i = 0; i < 5; i++) expect((await limiter.take('a')).allowed).toBe(true);
    expect((await limiter.take('a')).allowed).toBe(false);
    expect((await limiter.take('b')).remaining).toBe(4);
    now = 1000;
    expect((await limiter.take('a')).allowed).toBe(true);
    await limiter.close();
  });
});

function rateHeaders(res: { headers: Headers }) {
  return {
    limit: res.headers.get('x-ratelimit-limit'),
    remaining: res.headers.get('x-ratelimit-remaining'),
    reset: res.headers.get('x-ratelimit-reset'),
  };
}

describe('rate limits over HTTP (memory)', () => {
  let h: Harness;
  beforeAll(async () => {
    h = await startHarness({ env: LIMITS });
  });
  afterAll(async () => {
    await h.close();
  });

  it('carries the headers on every authenticated response and answers 429 past the burst', async () => {
    const { key } = await h.key(['evaluators:read']);
    const before = Math.floor(Date.now() / 1000);
    const calls = [
      () => h.call('GET', '/v1/evaluators', { key }),
      () => h.call('GET', '/v1/evaluators/missing', { key }),
      () => h.call('GET', '/v1/evaluators?limit=0', { key }),
      () => h.call('GET', '/v1/containers', { key }),
      () => h.call('GET', '/v1/evaluators', { key }),
    ];
    const statuses = [];
    for (const [i, call] of calls.entries()) {
      const res = await call();
      statuses.push(res.status);
      const headers = rateHeaders(res);
      expect(headers.limit).toBe('5');
      expect(headers.remaining).toBe(String(4 - i));
      expect(Number(headers.reset)).toBeGreaterThanOrEqual(before);
      expect(Number.isInteger(Number(headers.reset))).toBe(true);
      expect(res.headers.get('retry-after')).toBeNull();
    }
    // Successes and errors alike spend from the budget and carry the headers.
    expect(statuses).toEqual([200, 404, 422, 403, 200]);

    const refused = await h.call('GET', '/v1/evaluators', { key });
    expect(refused.status).toBe(429);
    expect(refused.body.error.code).toBe('rate_limit_exceeded');
    expect(Object.keys(refused.body)).toEqual(['error']);
    const retryAfter = refused.headers.get('retry-after');
    expect(retryAfter).toMatch(/^\d+$/);
    expect(Number(retryAfter)).toBeGreaterThanOrEqual(1);
    expect(Number(retryAfter)).toBeLessThanOrEqual(10);
    expect(rateHeaders(refused)).toMatchObject({ limit: '5', remaining: '0' });

    // The budget is per key: another key of the same project is untouched.
    const other = await h.key(['evaluators:read']);
    const fresh = await h.call('GET', '/v1/evaluators', { key: other.key });
    expect(fresh.status).toBe(200);
    expect(rateHeaders(fresh).remaining).toBe('4');
  });

  it('does not put rate headers on /healthz or on requests without a valid key', async () => {
    const health = await h.call('GET', '/healthz', { key: null });
    expect(rateHeaders(health).limit).toBeNull();
    const anonymous = await h.call('GET', '/v1/evaluators', { key: null });
    expect(anonymous.status).toBe(401);
    expect(rateHeaders(anonymous).limit).toBeNull();
  });
});

describe('rate limits shared through Redis', () => {
  let a: Harness;
  let b: Harness;
  beforeAll(async () => {
    const env = { ...LIMITS, EVALGATE_REDIS_URL: REDIS_URL };
    a = await startHarness({ env });
    b = await startHarness({ env, database: a.database });
  });
  afterAll(async () => {
    await b?.close();
    await a?.close();
  });

  it('spends one budget per key across two app instances', async () => {
    // A new key, so no other test (or earlier run) shares its Redis budget.
    const { key } = await a.key(['evaluators:read']);
    const seen: [number, string | null][] = [];
    for (let i = 0; i < 6; i++) {
      const res = await (i % 2 === 0 ? a : b).call('GET', '/v1/evaluators', { key });
      seen.push([res.status, res.headers.get('x-ratelimit-remaining')]);
    }
    expect(seen).toEqual([
      [200, '4'],
      [200, '3'],
      [200, '2'],
      [200, '1'],
      [200, '0'],
      [429, '0'],
    ]);
    const refused = await a.call('GET', '/v1/evaluators', { key });
    expect(refused.status).toBe(429);
    expect(Number(refused.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
  });

  it('would not share it without Redis (the test above can tell the difference)', async () => {
    const c = await startHarness({ env: LIMITS, database: a.database });
    const d = await startHarness({ env: LIMITS, database: a.database });
    try {
      const { key } = await c.key(['evaluators:read']);
      const statuses = [];
      for (let i = 0; i < 6; i++)
        statuses.push((await (i % 2 === 0 ? c : d).call('GET', '/v1/evaluators', { key })).status);
      expect(statuses).toEqual([200, 200, 200, 200, 200, 200]);
    } finally {
      await d.close();
      await c.close();
    }
  });
});
