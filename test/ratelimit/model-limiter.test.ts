// Database-independent: the model limiters live in memory and in Redis, not in the database.
import { randomUUID } from 'node:crypto';
import { Redis } from 'ioredis';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { ModelLimiter, ModelLimits, Permit } from '../../src/ratelimit/model-limiter.js';
import { createMemoryModelLimiter, LimiterClosedError } from '../../src/ratelimit/model-limiter-memory.js';
import { createRedisModelLimiter } from '../../src/ratelimit/model-limiter-redis.js';
import { waitFor } from '../helpers/wait.js';

const REDIS_URL = process.env.EVALGATE_TEST_REDIS_URL ?? 'redis://127.0.0.1:6379';
const REFRESH_MS = 100;
const never = new AbortController().signal;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const limits = (concurrency: number, rpm: number | null = null, tpm: number | null = null): ModelLimits => ({
  concurrency,
  rpm,
  tpm,
});

let prefix = '';
const opened: ModelLimiter[] = [];
let raw: Redis;

beforeAll(() => {
  raw = new Redis(REDIS_URL);
});
afterAll(async () => {
  await raw.quit();
});
beforeEach(() => {
  prefix = `evalgate-test-${randomUUID()}`;
});
afterEach(async () => {
  await Promise.all(opened.splice(0).map((l) => l.close()));
});

function memory(): Promise<ModelLimiter> {
  const limiter = createMemoryModelLimiter();
  opened.push(limiter);
  return Promise.resolve(limiter);
}

async function redis(workerId = 'w1'): Promise<ModelLimiter> {
  const limiter = await createRedisModelLimiter({
    url: REDIS_URL,
    workerId,
    prefix,
    shareRefreshMs: REFRESH_MS,
  });
  opened.push(limiter);
  return limiter;
}

/** A promise's outcome so far, without waiting for it. */
function track<T>(promise: Promise<T>) {
  const state = { done: false, value: undefined as T | undefined, error: undefined as unknown };
  promise.then(
    (value) => Object.assign(state, { done: true, value }),
    (error) => Object.assign(state, { done: true, error }),
  );
  return state;
}

async function timed<T>(promise: Promise<T>): Promise<[T, number]> {
  const t0 = performance.now();
  const value = await promise;
  return [value, performance.now() - t0];
}

describe.each([
  ['memory', memory],
  ['redis', () => redis('w1')],
])('%s model limiter', (_name, make) => {
  it('never has more calls in flight than the concurrency', async () => {
    const limiter = await make();
    let inFlight = 0;
    let most = 0;
    await Promise.all(
      Array.from({ length: 40 }, async (_, i) => {
        const permit = await limiter.acquire('m', limits(3), never);
        most = Math.max(most, ++inFlight);
        await sleep(1 + (i % 4));
        inFlight--;
        permit.release(0);
      }),
    );
    expect(most).toBe(3);
  });

  it('wakes waiters in order, one per release', async () => {
    const limiter = await make();
    const hold = await limiter.acquire('m', limits(1), never);
    const order: string[] = [];
    const waiting = ['a', 'b', 'c'].map((name) =>
      limiter.acquire('m', limits(1), never).then((permit) => {
        order.push(name);
        return permit;
      }),
    );
    await sleep(20);
    expect(order).toEqual([]);
    hold.release(0);
    for (const [i, next] of waiting.entries()) {
      const permit = await next;
      await sleep(10);
      expect(order).toEqual(['a', 'b', 'c'].slice(0, i + 1));
      permit.release(0);
    }
  });

  it('rejects an aborted waiter with the reason, and frees no slot', async () => {
    const limiter = await make();
    const hold = await limiter.acquire('m', limits(1), never);
    const controller = new AbortController();
    const aborted = limiter.acquire('m', limits(1), controller.signal);
    const behind = track(limiter.acquire('m', limits(1), never));
    const reason = new Error('run cancelled');
    controller.abort(reason);
    await expect(aborted).rejects.toBe(reason);
    await sleep(30);
    expect(behind.done).toBe(false);
    await expect(limiter.acquire('m', limits(1), controller.signal)).rejects.toBe(reason);
    hold.release(0);
    await waitFor(() => behind.done, 1000, 'the next waiter');
    expect(behind.value).toBeDefined();
  });

  it('rejects every waiter of an aborted signal, granting none of them', async () => {
    const limiter = await make();
    const hold = await limiter.acquire('m', limits(1), never);
    const controller = new AbortController();
    const waiting = Array.from({ length: 50 }, () =>
      track(limiter.acquire('m', limits(1), controller.signal)),
    );
    const other = track(limiter.acquire('m', limits(1), never));
    await sleep(10);
    controller.abort('cancelled');
    hold.release(0);
    await waitFor(() => other.done && waiting.every((w) => w.done), 1000, 'every waiter settled');
    expect(waiting.map((w) => w.error)).toEqual(waiting.map(() => 'cancelled'));
    expect(other.value).toBeDefined();
  });

  it('holds acquires while a pause is in force; pausedFor counts down; pause only extends', async () => {
    const limiter = await make();
    await limiter.pause('m', 300);
    const first = limiter.pausedFor('m');
    expect(first).toBeGreaterThan(250);
    expect(first).toBeLessThanOrEqual(300);
    await limiter.pause('m', 50);
    expect(limiter.pausedFor('m')).toBeGreaterThan(200);
    expect(limiter.pausedFor('other')).toBe(0);
    const waiting = track(timed(limiter.acquire('m', limits(5), never)));
    await sleep(100);
    expect(waiting.done).toBe(false);
    expect(limiter.pausedFor('m')).toBeLessThan(first - 80);
    await waitFor(() => waiting.done, 2000, 'the paused acquire');
    expect(waiting.value![1]).toBeGreaterThanOrEqual(150);
    expect(limiter.pausedFor('m')).toBe(0);
    waiting.value![0].release(0);
  });

  it('lets a full RPM burst through at once, then one request per interval', async () => {
    const limiter = await make();
    const [burst, burstMs] = await timed(
      Promise.all(Array.from({ length: 120 }, () => limiter.acquire('m', limits(1000, 120), never))),
    );
    expect(burstMs).toBeLessThan(300);
    const [next, waitedMs] = await timed(limiter.acquire('m', limits(1000, 120), never));
    expect(waitedMs).toBeGreaterThan(350);
    expect(waitedMs).toBeLessThan(1000);
    for (const permit of [...burst, next]) permit.release(0);
  });

  it('charges TPM on release and waits while the budget is in debt', async () => {
    const limiter = await make();
    // 6000 per minute: 10 ms per token; 100 + 5950 tokens put the budget 500 ms past a full window.
    const small = await limiter.acquire('m', limits(10, null, 6000), never);
    small.release(100);
    const [big, quickMs] = await timed(limiter.acquire('m', limits(10, null, 6000), never));
    expect(quickMs).toBeLessThan(100);
    big.release(5950);
    const [next, waitedMs] = await timed(limiter.acquire('m', limits(10, null, 6000), never));
    expect(waitedMs).toBeGreaterThan(350);
    expect(waitedMs).toBeLessThan(1200);
    next.release(0);
  });

  it('rejects waiters when closed', async () => {
    const limiter = await make();
    await limiter.acquire('m', limits(1), never);
    const rejected = expect(limiter.acquire('m', limits(1), never)).rejects.toBeInstanceOf(
      LimiterClosedError,
    );
    await sleep(10);
    await limiter.close();
    await rejected;
    await expect(limiter.acquire('m', limits(1), never)).rejects.toBeInstanceOf(LimiterClosedError);
  });
});

describe('redis model limiter across workers', () => {
  it('falls back to the local limits when a Redis call fails, and says so through warn', async () => {
    const warnings: string[] = [];
    const warn = (msg: string) => warnings.push(msg);
    const w = await createRedisModelLimiter({ url: REDIS_URL, workerId: 'w1', prefix, warn });
    opened.push(w);
    // Keys of the wrong kind make the membership and the RPM scripts fail.
    await raw.set(`${prefix}:model:m:workers`, 'not a sorted set');
    await raw.set(`${prefix}:model:m:rpm`, 'not a number');
    const [permits, ms] = await timed(Promise.all([1, 2].map(() => w.acquire('m', limits(3, 2), never))));
    expect(ms).toBeLessThan(300);
    expect(warnings).toHaveLength(1);
    expect(warnings[0]).toMatch(/Redis call failed/);
    // The local RPM budget (2 at once) still holds.
    const third = track(w.acquire('m', limits(3, 2), never));
    await sleep(50);
    expect(third.done).toBe(false);
    for (const permit of permits) permit.release(0);
    await raw.del(`${prefix}:model:m:workers`, `${prefix}:model:m:rpm`);
  });

  /** Two workers that have both used model `m` and seen each other. */
  async function twoWorkers(): Promise<[ModelLimiter, ModelLimiter]> {
    const w1 = await redis('w1');
    const w2 = await redis('w2');
    for (const w of [w1, w2]) (await w.acquire('m', limits(4), never)).release(0);
    await sleep(3 * REFRESH_MS);
    return [w1, w2];
  }

  it('splits the concurrency between live workers', async () => {
    const workers = await twoWorkers();
    let total = 0;
    let mostTotal = 0;
    const most = [0, 0];
    const inFlight = [0, 0];
    await Promise.all(
      workers.flatMap((w, k) =>
        Array.from({ length: 12 }, async () => {
          const permit = await w.acquire('m', limits(4), never);
          mostTotal = Math.max(mostTotal, ++total);
          most[k] = Math.max(most[k]!, ++inFlight[k]!);
          await sleep(15);
          total--;
          inFlight[k]!--;
          permit.release(0);
        }),
      ),
    );
    expect(mostTotal).toBe(4);
    expect(most).toEqual([2, 2]);
  });

  it('never exceeds the concurrency across workers while workers join a busy model', async () => {
    // w1 alone fills all 6 slots with long calls; w2 and w3 join while those are in flight. Under the
    // shares alone w1 would keep 6 and the newcomers start 2 each (10 at once).
    const C = 6;
    let total = 0;
    let mostTotal = 0;
    const call = async (w: ModelLimiter, ms: number) => {
      const permit = await w.acquire('m', limits(C), never);
      mostTotal = Math.max(mostTotal, ++total);
      await sleep(ms);
      total--;
      permit.release(0);
    };
    const w1 = await redis('w1');
    const first = Array.from({ length: C }, () => call(w1, 6 * REFRESH_MS));
    await sleep(REFRESH_MS / 2);
    expect(total).toBe(C);
    const [w2, w3] = await Promise.all([redis('w2'), redis('w3')]);
    const later = [w1, w2, w3].flatMap((w) => Array.from({ length: 6 }, () => call(w, REFRESH_MS / 2)));
    await Promise.all([...first, ...later]);
    expect(mostTotal).toBe(C);
    // Once w1's long calls ended, the three shares (2 each) were all in use at once.
    expect(await raw.hlen(`${prefix}:model:m:active`)).toBe(3);
  });

  it('shares a pause with the other workers within 200 ms, and with workers that join later', async () => {
    const [w1, w2] = await twoWorkers();
    await w1.pause('m', 1000);
    await waitFor(() => w2.pausedFor('m') > 0, 200, 'the pause on w2');
    expect(w2.pausedFor('m')).toBeGreaterThan(700);
    const w3 = await redis('w3');
    const late = track(w3.acquire('m', limits(4), never));
    await sleep(100);
    expect(late.done).toBe(false);
    expect(w3.pausedFor('m')).toBeGreaterThan(500);
  });

  it('gives a closed worker share back to the others within a couple of refreshes', async () => {
    const [w1, w2] = await twoWorkers();
    const held = [await w2.acquire('m', limits(4), never), await w2.acquire('m', limits(4), never)];
    const third = track(w2.acquire('m', limits(4), never));
    await sleep(2 * REFRESH_MS);
    expect(third.done).toBe(false);
    const closedAt = performance.now();
    await w1.close();
    expect(await raw.zrange(`${prefix}:model:m:workers`, 0, -1)).toEqual(['w2']);
    await waitFor(() => third.done, 3 * REFRESH_MS + 100, 'the grown share');
    expect(performance.now() - closedAt).toBeLessThan(3 * REFRESH_MS + 100);
    for (const permit of [...held, third.value as Permit]) permit.release(0);
  });
});
