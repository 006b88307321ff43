import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createDatabaseCounter, createMemoryCounter, type SpendCounter } from '../../src/budgets/counter.js';
import { createRedisCounter } from '../../src/budgets/counter-redis.js';
import { periodWindow } from '../../src/budgets/period.js';
import { Budgets } from '../../src/budgets/service.js';
import { type DatabaseHandle, openDatabase } from '../../src/db/database.js';
import { ApiError } from '../../src/shared/errors.js';
import { ensureProject } from '../../src/tenancy/projects.js';
import { type FreshDatabase, freshDatabase, testDbKind } from '../helpers/databases.js';

/*
 * The budget service built from its ports alone (database, counter, clock), on each counter the
 * deployments use: the day period resets at midnight UTC, Retry-After counts down to it, a month ends on
 * its last day, and spend survives a restart (a new counter seeded from the database).
 */

let db: FreshDatabase;
let handle: DatabaseHandle;
let projectId: string;
beforeAll(async () => {
  db = await freshDatabase();
  handle = await openDatabase(db.url);
  await handle.migrate();
  projectId = (await ensureProject(handle.db, 'periods')).id;
});
afterAll(async () => {
  await handle?.close();
  await db?.drop();
});

const warn = (message: string) => {
  throw new Error(`unexpected warning: ${message}`);
};
// Each Redis counter has a prefix of its own: a second one finds nothing in Redis and seeds from the database.
const prefix = () => `egt-periods-${randomBytes(4).toString('hex')}`;
const counters: [string, () => SpendCounter | Promise<SpendCounter>][] = [
  ['memory', () => createMemoryCounter({ db: handle.db, warn }, 10)],
  ['database', () => createDatabaseCounter({ db: handle.db, warn })],
];
if (testDbKind() === 'postgres') {
  counters.push([
    'redis',
    () => createRedisCounter({ db: handle.db, warn, url: 'redis://127.0.0.1:6379', prefix: prefix() }),
  ]);
}

async function refusal(budgets: Budgets, keyId: string): Promise<ApiError | null> {
  try {
    await budgets.check({ projectId, keyId });
    return null;
  } catch (err) {
    if (err instanceof ApiError) return err;
    throw err;
  }
}

describe.each(counters)('budget periods on the %s counter', (kind, counter) => {
  it('a day budget stops at its limit, says when it resets, and resets at midnight UTC', async () => {
    let now = Date.UTC(2031, 2, 14, 22, 59, 30);
    const budgets = new Budgets({ db: handle.db, counter: await counter(), cacheMs: 0, now: () => now });
    const keyId = `key_${kind}_day`;
    await budgets.set(projectId, 'key', keyId, { limit_usd: 1, period: 'day' });
    const payer = { projectId, keyId };
    await budgets.check(payer);
    budgets.charge(payer, 0.6);
    await budgets.check(payer);
    budgets.charge(payer, 0.6);
    await new Promise((r) => setTimeout(r, 50));
    const refused = await refusal(budgets, keyId);
    expect(refused?.code).toBe('budget_exceeded');
    expect(refused?.status).toBe(429);
    expect(refused?.headers['Retry-After']).toBe(String(3600 + 30));
    expect(refused?.details).toMatchObject({
      used_usd: 1.2,
      limit_usd: 1,
      resets_at: '2031-03-15T00:00:00.000Z',
    });
    const state = await budgets.get(projectId, 'key', keyId);
    expect(state.spend).toEqual({
      period_start: '2031-03-14T00:00:00.000Z',
      used_usd: 1.2,
      limit_usd: 1,
      resets_at: '2031-03-15T00:00:00.000Z',
    });
    // Past midnight UTC: a new period, nothing spent in it yet.
    now = Date.UTC(2031, 2, 15, 0, 0, 1);
    expect(await refusal(budgets, keyId)).toBeNull();
    expect((await budgets.get(projectId, 'key', keyId)).spend).toMatchObject({
      period_start: '2031-03-15T00:00:00.000Z',
      used_usd: 0,
    });
    await budgets.close();
  });

  it('spend survives a restart: a new counter starts from what was stored', async () => {
    const now = () => Date.UTC(2031, 4, 31, 12);
    const keyId = `key_${kind}_restart`;
    const first = new Budgets({ db: handle.db, counter: await counter(), cacheMs: 0, now });
    await first.set(projectId, 'key', keyId, { limit_usd: 5, period: 'month' });
    await first.check({ projectId, keyId });
    first.charge({ projectId, keyId }, 2.5);
    await first.close();
    // A fresh process (for Redis, one whose counters are gone from Redis) reads the stored spend.
    const second = new Budgets({ db: handle.db, counter: await counter(), cacheMs: 0, now });
    const state = await second.get(projectId, 'key', keyId);
    expect(state.spend).toEqual({
      period_start: '2031-05-01T00:00:00.000Z',
      used_usd: 2.5,
      limit_usd: 5,
      resets_at: '2031-06-01T00:00:00.000Z',
    });
    await second.close();
  });
});

describe('period windows', () => {
  it('are UTC calendar days and months; total never resets', () => {
    const t = Date.UTC(2032, 1, 29, 23, 59, 59, 999);
    expect(periodWindow('day', t)).toEqual({ start: Date.UTC(2032, 1, 29), resetsAt: Date.UTC(2032, 2, 1) });
    expect(periodWindow('month', t)).toEqual({ start: Date.UTC(2032, 1, 1), resetsAt: Date.UTC(2032, 2, 1) });
    expect(periodWindow('month', Date.UTC(2032, 11, 31, 5))).toEqual({
      start: Date.UTC(2032, 11, 1),
      resetsAt: Date.UTC(2033, 0, 1),
    });
    expect(periodWindow('total', t)).toEqual({ start: 0, resetsAt: null });
  });
});
