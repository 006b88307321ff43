/**
 * Issue 15: a Redis outage. /healthz names Redis while it is away; the API rate limiter fails open
 * (limiting with each process's own budget) or closed (503), as EVALGATE_RATE_LIMIT_ON_REDIS_ERROR says;
 * once Redis is back the limits are shared through it again. Runs on a private redis-server, once: in the
 * SQLite project (the database plays no part).
 */
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { testDbKind } from '../helpers/databases.js';
import { type Harness, startHarness } from '../helpers/harness.js';
import { waitFor } from '../helpers/wait.js';
import { type PrivateRedis, startPrivateRedis } from './servers.js';

const BURST = 5;

let redis: PrivateRedis;
let open: Harness;
let closed: Harness;
/** Runs on the BullMQ queue: its connection to Redis counts for /healthz too. */
let queued: Harness;
const warnings: string[] = [];

beforeAll(async () => {
  if (testDbKind() !== 'sqlite') return;
  redis = await startPrivateRedis();
  const env = {
    EVALGATE_REDIS_URL: redis.url,
    EVALGATE_REDIS_PREFIX: 'outage',
    EVALGATE_RATE_LIMIT_PER_MINUTE: '60',
    EVALGATE_RATE_LIMIT_BURST: String(BURST),
  };
  // The default is to fail open.
  open = await startHarness({ env });
  open.services.logger.warn = ((message: string) => warnings.push(String(message))) as never;
  closed = await startHarness({ env: { ...env, EVALGATE_RATE_LIMIT_ON_REDIS_ERROR: 'closed' } });
  queued = await startHarness({ env: { ...env, EVALGATE_EXECUTOR: 'bullmq' } });
});
afterAll(async () => {
  await open?.close();
  await closed?.close();
  await queued?.close();
  await redis?.destroy();
});

async function health(h: Harness) {
  const res = await h.call('GET', '/healthz', { key: null });
  return { status: res.status, body: res.body, unavailable: res.headers.get('x-evalgate-unavailable') };
}

/** `BURST + 1` calls in a row with a new key: the statuses and the rate-limit headers of each. */
async function spend(h: Harness) {
  const { key } = await h.key();
  const answers = [];
  for (let i = 0; i <= BURST; i++) {
    const res = await h.call('GET', '/v1/evaluators', { key });
    answers.push({
      status: res.status,
      code: (res.body as any)?.error?.code ?? null,
      limit: res.headers.get('x-ratelimit-limit'),
      remaining: res.headers.get('x-ratelimit-remaining'),
      reset: res.headers.get('x-ratelimit-reset'),
    });
  }
  return answers;
}

/** Budget keys of the limiter stored in Redis right now. */
async function budgetKeys(): Promise<string[]> {
  const client = new Redis(redis.url, { lazyConnect: true });
  await client.connect();
  try {
    return await client.keys('outage:rl:*');
  } finally {
    client.disconnect();
  }
}

describe.skipIf(testDbKind() !== 'sqlite')('Redis outage', () => {
  it('reports Redis in /healthz, fails open or closed as configured, and shares limits again once it is back', {
    timeout: 60_000,
  }, async () => {
    // Healthy: limits are shared through Redis.
    for (const h of [open, closed, queued])
      expect(await health(h)).toEqual({ status: 200, body: { ok: true }, unavailable: null });
    const before = await spend(open);
    expect(before.map((a) => a.status)).toEqual([...Array(BURST).fill(200), 429]);
    expect((await budgetKeys()).length).toBeGreaterThan(0);

    await redis.stop();
    try {
      for (const h of [open, closed, queued]) {
        await waitFor(async () => (await health(h)).status === 503, 10_000, '/healthz to answer 503');
        expect(await health(h)).toEqual({ status: 503, body: { ok: false }, unavailable: 'redis' });
      }

      // Fail-open: calls pass, with sensible headers, and each process still limits on its own budget.
      const during = await spend(open);
      expect(during.map((a) => a.status)).toEqual([...Array(BURST).fill(200), 429]);
      expect(during[0]).toMatchObject({ limit: String(BURST), remaining: String(BURST - 1) });
      for (const a of during) expect(Number(a.reset)).toBeGreaterThan(Date.now() / 1000 - 1);
      expect(during[BURST]!.code).toBe('rate_limit_exceeded');

      // Fail-closed: 503 in the envelope.
      const { key } = await closed.key();
      const refused = await closed.call('GET', '/v1/evaluators', { key });
      expect(refused.status).toBe(503);
      expect(refused.body.error.code).toBe('upstream_unavailable');
      // Requests that need no key are unaffected.
      expect((await closed.call('GET', '/openapi.json', { key: null, unchecked: true })).status).toBe(200);
    } finally {
      await redis.start();
    }

    // Back: healthy again without a restart, and the budgets live in Redis again.
    for (const h of [open, closed, queued]) {
      await waitFor(async () => (await health(h)).status === 200, 20_000, '/healthz to answer 200 again');
      expect(await health(h)).toEqual({ status: 200, body: { ok: true }, unavailable: null });
    }
    expect(await budgetKeys()).toEqual([]);
    await waitFor(
      async () => (await closed.call('GET', '/v1/evaluators', { key: closed.admin.key })).status === 200,
      10_000,
      'the fail-closed limiter to let calls through again',
    );
    const after = await spend(open);
    expect(after.map((a) => a.status)).toEqual([...Array(BURST).fill(200), 429]);
    expect((await budgetKeys()).length).toBeGreaterThan(0);

    // One warning as the outage started and one as it ended, however many calls fell in between.
    expect(warnings.filter((w) => w.startsWith('Redis is unavailable for rate limits'))).toHaveLength(1);
    expect(warnings.filter((w) => w.startsWith('Redis answers again'))).toHaveLength(1);
    expect(
      warnings.filter(
        (w) => w === 'Health: redis is unavailable' || w.startsWith('Health: redis is unavailable'),
      ),
    ).toHaveLength(1);
  });
});
