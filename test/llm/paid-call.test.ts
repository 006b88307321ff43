import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type DatabaseHandle, openDatabase } from '../../src/db/database.js';
import { maxCallCost } from '../../src/llm/estimate.js';
import { paidCall } from '../../src/llm/paid-call.js';
import type { ChatRequest } from '../../src/llm/types.js';
import { ApiError } from '../../src/shared/errors.js';
import { ensureProject } from '../../src/tenancy/projects.js';
import { type MockUpstream, startMockUpstream } from '../fixtures/mock-upstream.js';
import { type FreshDatabase, freshDatabase } from '../helpers/databases.js';
import { testInferencePorts } from '../helpers/inference-ports.js';
import { modelAt } from './layer-helpers.js';

/*
 * The one paid call, from the gateway's ports alone (no server): real provider layer to the mock
 * upstream, real budgets over the test's database. Reservation keeps concurrent calls within one call's
 * estimated cost of a budget; a failed call gives its reservation back; the permit is released with the
 * tokens used.
 */

let db: FreshDatabase;
let handle: DatabaseHandle;
let mock: MockUpstream;
let projectId: string;
const opened: ReturnType<typeof testInferencePorts>[] = [];
function newPorts() {
  const built = testInferencePorts(handle.db);
  opened.push(built);
  return built;
}
beforeAll(async () => {
  db = await freshDatabase();
  handle = await openDatabase(db.url);
  await handle.migrate();
  projectId = (await ensureProject(handle.db, 'paid-call')).id;
  // Overlapping calls: each answer takes a while.
  mock = await startMockUpstream({ latencyMs: 40, record: false });
});
afterAll(async () => {
  for (const p of opened) await p.budgets.close();
  await mock?.close();
  await handle?.close();
  await db?.drop();
});

/** 12 prompt and 7 completion tokens at 100 and 1000 USD per million: $0.0082 a call. */
const ACTUAL = (12 * 100 + 7 * 1000) / 1e6;
const request: ChatRequest = { model: 'm', messages: [{ role: 'user', content: 'Hi' }], max_tokens: 10 };

async function spendOf(ports: ReturnType<typeof testInferencePorts>, scope: 'key' | 'project', id: string) {
  const state = await ports.budgets.get(projectId, scope, id);
  return state.spend?.used_usd ?? 0;
}

describe('paidCall', () => {
  it.each(['key', 'project'] as const)(
    '64 concurrent calls against a $0.05 %s budget stop within one call’s estimated cost of it',
    async (scope) => {
      const ports = newPorts();
      const model = modelAt(mock.baseUrl, { inputPricePerMtok: 100, outputPricePerMtok: 1000 });
      const keyId = `key_${scope}_${Date.now()}`;
      await ports.budgets.set(projectId, scope, scope === 'key' ? keyId : projectId, {
        limit_usd: 0.05,
        period: 'total',
      });
      const estimate = maxCallCost(model, request);
      expect(estimate).toBeGreaterThanOrEqual(ACTUAL);
      let answered = 0;
      let refused = 0;
      // Rounds of 64 at once, until a round is refused whole: the budget is then spent.
      for (let round = 0; round < 5; round++) {
        const outcomes = await Promise.allSettled(
          Array.from({ length: 64 }, () =>
            paidCall(ports, {
              payer: { projectId, keyId },
              estimate,
              run: () => ports.providers.complete(model, request),
              cost: (r) => r.cost,
            }),
          ),
        );
        const ok = outcomes.filter((o) => o.status === 'fulfilled').length;
        for (const o of outcomes) {
          if (o.status === 'rejected') {
            expect(o.reason).toBeInstanceOf(ApiError);
            expect((o.reason as ApiError).code).toBe('budget_exceeded');
            refused += 1;
          }
        }
        answered += ok;
        if (ok === 0) break;
      }
      const spend = await spendOf(ports, scope, scope === 'key' ? keyId : projectId);
      expect(refused).toBeGreaterThan(0);
      expect(spend).toBeCloseTo(answered * ACTUAL, 9);
      // Past the limit (it was reached), by less than one call's estimate.
      expect(spend).toBeGreaterThanOrEqual(0.05);
      expect(spend).toBeLessThan(0.05 + estimate);
      if (scope === 'project') await ports.budgets.set(projectId, 'project', projectId, null);
    },
  );

  it('gives a failed call’s reservation back, records the cost before settling, and releases the permit with the tokens', async () => {
    const ports = newPorts();
    const model = modelAt(mock.baseUrl, { inputPricePerMtok: 100, outputPricePerMtok: 1000 });
    const keyId = `key_fail_${Date.now()}`;
    await ports.budgets.set(projectId, 'key', keyId, { limit_usd: 1, period: 'total' });
    const payer = { projectId, keyId };
    const released: number[] = [];
    const permit = async () => ({ release: (tokens: number) => released.push(tokens) });
    mock.fail({ status: 400, message: 'bad request (mock)' });
    await expect(
      paidCall(ports, {
        payer,
        estimate: 0.5,
        permit,
        run: () => ports.providers.complete(model, request),
        cost: (r) => r.cost,
      }),
    ).rejects.toMatchObject({ status: 400 });
    expect(await spendOf(ports, 'key', keyId)).toBe(0);
    expect(released).toEqual([0]);
    const seen: number[] = [];
    const result = await paidCall(ports, {
      payer,
      estimate: 0.5,
      permit,
      run: () => ports.providers.complete(model, request),
      cost: (r) => r.cost,
      tokens: (r) => r.usage?.total_tokens ?? 0,
      spent: (_r, cost) => seen.push(cost),
    });
    expect(result.cost).toBeCloseTo(ACTUAL, 12);
    expect(seen).toEqual([result.cost]);
    expect(released).toEqual([0, 19]);
    expect(await spendOf(ports, 'key', keyId)).toBeCloseTo(ACTUAL, 9);
    // A reservation larger than what is left still passes (the spend is under the limit); one at the limit does not.
    await ports.budgets.set(projectId, 'key', keyId, { limit_usd: ACTUAL, period: 'total' });
    const refusals: unknown[] = [];
    await expect(
      paidCall(ports, {
        payer,
        estimate: 0.5,
        permit,
        refused: async (err) => {
          refusals.push(err);
        },
        run: () => ports.providers.complete(model, request),
        cost: (r) => r.cost,
      }),
    ).rejects.toMatchObject({ code: 'budget_exceeded' });
    expect(refusals).toHaveLength(1);
    expect(released).toEqual([0, 19, 0]);
    expect(await spendOf(ports, 'key', keyId)).toBeCloseTo(ACTUAL, 9);
  });

  it('estimates from the request’s bound, the model’s default, or the default bound; unpriced models reserve nothing', () => {
    const priced = modelAt('http://127.0.0.1:1/v1', { inputPricePerMtok: 1, outputPricePerMtok: 1 });
    const small = maxCallCost(priced, { ...request, max_tokens: 10 });
    const big = maxCallCost(priced, { ...request, max_tokens: undefined });
    const byDefault = maxCallCost(
      { ...priced, defaultParameters: { max_tokens: 100 } },
      {
        model: 'm',
        messages: [],
      },
    );
    expect(small).toBeLessThan(byDefault);
    expect(byDefault).toBeLessThan(big);
    expect(
      maxCallCost(modelAt('http://x/v1', { inputPricePerMtok: null, outputPricePerMtok: null }), request),
    ).toBe(0);
  });
});
