import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { maxCallCost } from '../../src/llm/estimate.js';
import { type Gateway, startGateway } from '../gateway/gateway-helpers.js';

/*
 * Budgets by reservation through the gateway (inline mode): 64 chat calls at once against a $0.05 budget,
 * per key and per project, stop within one call's estimated cost of it. Without reservation every call
 * in flight passed the check, and the spend went past the limit by up to the calls in flight.
 */

/** 12 prompt and 7 completion tokens at 100 and 1000 USD per million: $0.0082 a call. */
const PRICES = { input_price_per_mtok: 100, output_price_per_mtok: 1000 };
const ACTUAL = (12 * 100 + 7 * 1000) / 1e6;
const LIMIT = 0.05;

let g: Gateway;
beforeAll(async () => {
  g = await startGateway();
  // The calls overlap: each answer takes a while.
  g.mock.set({ latencyMs: 60, record: false });
});
afterAll(async () => {
  await g?.close();
});

const body = { model: 'priced', messages: [{ role: 'user', content: 'Hi' }], max_tokens: 10 };

async function burst(key: string): Promise<{ ok: number; refused: number }> {
  const statuses = await Promise.all(
    Array.from({ length: 64 }, async () => {
      const res = await fetch(`${g.h.url}/v1/chat/completions`, {
        method: 'POST',
        headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
        body: JSON.stringify(body),
      });
      const json: any = await res.json();
      if (res.status === 429) expect(json.error.code).toBe('budget_exceeded');
      return res.status;
    }),
  );
  for (const s of statuses) expect([200, 429]).toContain(s);
  return {
    ok: statuses.filter((s) => s === 200).length,
    refused: statuses.filter((s) => s === 429).length,
  };
}

describe.each(['key', 'project'] as const)('64 concurrent calls against a $0.05 %s budget', (scope) => {
  it('stop within one call’s estimated cost of it', async () => {
    const owner = await g.h.key(['*'], `reserve-${scope}-${randomBytes(3).toString('hex')}`);
    const as = (method: string, path: string, b?: unknown) =>
      g.h.call(method, path, { key: owner.key, body: b });
    const model = await as('POST', '/v1/models', {
      label: 'priced',
      base_url: g.mock.baseUrl,
      upstream_model: 'u',
      ...PRICES,
    });
    expect(model.status, model.text).toBe(201);
    let key = owner.key;
    let read: () => Promise<number>;
    if (scope === 'key') {
      const created = await as('POST', '/v1/api-keys', {
        name: 'reserved',
        permissions: ['inference:write', 'keys:read'],
        budget: { limit_usd: LIMIT, period: 'day' },
      });
      expect(created.status, created.text).toBe(201);
      key = created.body.key;
      read = async () => (await as('GET', `/v1/api-keys/${created.body.id}`)).body.spend.used_usd;
    } else {
      expect(
        (await as('PUT', '/v1/projects/current/budget', { limit_usd: LIMIT, period: 'day' })).status,
      ).toBe(200);
      read = async () => (await as('GET', '/v1/projects/current/budget')).body.spend.used_usd;
    }
    // The estimate the gateway reserves for this request (its text as sent).
    const estimate = maxCallCost(
      { inputPricePerMtok: 100, outputPricePerMtok: 1000, defaultParameters: {} },
      body,
      JSON.stringify(body),
    );
    expect(estimate).toBeGreaterThanOrEqual(ACTUAL);
    let answered = 0;
    let refused = 0;
    for (let round = 0; round < 6; round++) {
      const r = await burst(key);
      answered += r.ok;
      refused += r.refused;
      if (r.ok === 0) break;
    }
    const spent = await read();
    expect(refused).toBeGreaterThan(0);
    expect(spent).toBeCloseTo(answered * ACTUAL, 9);
    expect(spent).toBeGreaterThanOrEqual(LIMIT);
    expect(spent).toBeLessThan(LIMIT + estimate);
  });
});
