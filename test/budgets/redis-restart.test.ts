import { randomBytes } from 'node:crypto';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createRedisCounter } from '../../src/budgets/counter-redis.js';
import { type CounterKey, storedSpend } from '../../src/budgets/repository.js';
import { type MockUpstream, startMockUpstream } from '../fixtures/mock-upstream.js';
import { type FreshDatabase, freshDatabase, testDbKind } from '../helpers/databases.js';
import { type Harness, startHarness } from '../helpers/harness.js';
import { type PrivateRedis, startPrivateRedis } from '../outage/servers.js';

/*
 * Budget spend after Redis is restarted empty (a private redis-server, `--save ''`): the counters are
 * rebuilt from the database and report what was recorded. Two processes share the Redis and the
 * database (two app instances here). A call that settles after the loss gives back the rest of its
 * reservation; that give-back reached the database only with the next batch (up to 200 ms later), so
 * the other process, seeding the counter from the database meanwhile, counted the whole reservation:
 * reported spend stayed over what was recorded for good (a `total` budget never resets).
 */

/** 12 prompt and 7 completion tokens at 100 and 1000 USD per million. */
const COST = (12 * 100 + 7 * 1000) / 1e6;

let redis: PrivateRedis;
let mock: MockUpstream;
let db: FreshDatabase;
let a: Harness;
let b: Harness;
let answered = 0;

beforeAll(async () => {
  redis = await startPrivateRedis();
  mock = await startMockUpstream({
    record: false,
    reply: () => {
      answered++;
      return 'ok';
    },
  });
  db = await freshDatabase();
  const env = { EVALGATE_REDIS_URL: redis.url, EVALGATE_REDIS_PREFIX: 'restart' };
  a = await startHarness({ env, database: db });
  b = await startHarness({ env, database: db });
}, 60_000);
afterAll(async () => {
  await a?.close();
  await b?.close();
  await db?.drop();
  await mock?.close();
  await redis?.destroy();
});

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function recorded(projectId: string): Promise<number> {
  const r = await sql<{ used_usd: number | string }>`
    select used_usd from budget_spend where scope = 'project' and scope_id = ${projectId}`.execute(
    a.services.db,
  );
  return Number(r.rows[0]?.used_usd ?? 0);
}

describe(`budget spend after Redis restarted empty (${testDbKind()}, two processes)`, () => {
  it('is the recorded spend: calls in flight across the restart, the counter seeded by the other process', async () => {
    const model = await a.call('POST', '/v1/models', {
      body: {
        label: 'priced',
        base_url: mock.baseUrl,
        upstream_model: 'u',
        input_price_per_mtok: 100,
        output_price_per_mtok: 1000,
      },
    });
    expect(model.status, model.text).toBe(201);
    const put = await a.call('PUT', '/v1/projects/current/budget', {
      body: { limit_usd: 100, period: 'total' },
    });
    expect(put.status).toBe(200);
    const body = { model: 'priced', messages: [{ role: 'user', content: 'Hi' }], max_tokens: 100 };
    const call = () => a.call('POST', '/v1/chat/completions', { body }).then((r) => r.status);
    // Counted in Redis before the loss.
    expect(await Promise.all(Array.from({ length: 8 }, call))).toEqual(Array(8).fill(200));
    // 32 calls in flight while Redis restarts empty: reserved before, settled after.
    // Redis is back well before they answer.
    mock.set({ latencyMs: 2000 });
    const inFlight = Promise.all(Array.from({ length: 32 }, call));
    // Every one reserved (it is upstream) and its reservation stored.
    await mock.until(() => mock.stats.requests >= 40, 10_000);
    await sleep(300);
    await redis.stop();
    await redis.start();
    expect(await inFlight).toEqual(Array(32).fill(200));
    mock.set({ latencyMs: 0 });
    // The other process reads first: it seeds the counter from the database.
    const seen = (await b.call('GET', '/v1/projects/current/budget')).body.spend.used_usd;
    // And more calls on both, counted in the rebuilt counter.
    for (const h of [a, b]) {
      const more = await Promise.all(
        Array.from({ length: 4 }, () =>
          h.call('POST', '/v1/chat/completions', { body }).then((r) => r.status),
        ),
      );
      expect(more).toEqual(Array(4).fill(200));
    }
    await sleep(500);
    const provider = answered * COST;
    const stored = await recorded(a.admin.projectId);
    const reportedA = (await a.call('GET', '/v1/projects/current/budget')).body.spend.used_usd;
    const reportedB = (await b.call('GET', '/v1/projects/current/budget')).body.spend.used_usd;
    console.info(
      JSON.stringify({ redis_restart: { answered, provider, stored, seen, reportedA, reportedB } }),
    );
    expect(answered).toBe(48);
    expect(seen).toBeCloseTo(40 * COST, 9);
    expect(stored).toBeCloseTo(provider, 9);
    expect(reportedA).toBeCloseTo(stored, 9);
    expect(reportedB).toBeCloseTo(stored, 9);
  }, 60_000);

  it('a give-back the counter missed reaches the database before the other process seeds it', async () => {
    const deps = {
      db: a.services.db,
      warn: () => {},
      url: redis.url,
      prefix: `gb-${randomBytes(3).toString('hex')}`,
    };
    const first = await createRedisCounter(deps);
    const second = await createRedisCounter(deps);
    try {
      const key: CounterKey = {
        scope: 'project',
        scopeId: `p-${randomBytes(3).toString('hex')}`,
        periodStart: '1970-01-01T00:00:00.000Z',
      };
      expect(await first.reserve([key], 1)).toEqual([1]);
      await sleep(300);
      expect(await storedSpend(a.services.db, key)).toBe(1);
      await redis.stop();
      await redis.start();
      // The call settles to 0.1 of its reservation of 1 while the counter is gone.
      await first.add([key], -0.9);
      expect(await second.read([key])).toEqual([expect.closeTo(0.1, 9)]);
      await sleep(300);
      expect(await storedSpend(a.services.db, key)).toBeCloseTo(0.1, 9);
      expect(await first.read([key])).toEqual([expect.closeTo(0.1, 9)]);
    } finally {
      await first.close();
      await second.close();
    }
  }, 30_000);
});
