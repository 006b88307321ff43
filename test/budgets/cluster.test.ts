import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { maxCallCost } from '../../src/llm/estimate.js';
import { type MockUpstream, startMockUpstream } from '../fixtures/mock-upstream.js';
import { type FreshDatabase, freshDatabase, testDbKind } from '../helpers/databases.js';
import { type FreshReply, requestOnFreshConnection } from '../helpers/fresh-connection.js';
import { unusedPort } from '../helpers/ports.js';
import { descendants, type EvalgateProcess, startEvalgate } from '../helpers/processes.js';
import { waitFor } from '../helpers/wait.js';

/**
 * Budgets held across the processes of `evalgate serve --workers 2`: on SQLite the workers share the
 * database's counters, on PostgreSQL the Redis counters. Each request goes on a connection of its own, so
 * that the kernel spreads them over both workers; runs execute in both workers too.
 */

/** 12 prompt and 7 completion tokens at 2 and 10 USD per million. */
const COST = (12 * 2 + 7 * 10) / 1e6;

describe(`budgets under serve --workers 2 (${testDbKind()}${testDbKind() === 'postgres' ? ' + Redis' : ''})`, () => {
  let db: FreshDatabase;
  let mock: MockUpstream;
  let server: EvalgateProcess;
  let port: number;
  let admin: string;

  const call = (
    method: string,
    path: string,
    key: string,
    body?: unknown,
    headers: Record<string, string> = {},
  ) => requestOnFreshConnection(port, method, path, { key, body, headers });

  beforeAll(async () => {
    mock = await startMockUpstream({ record: false });
    db = await freshDatabase();
    port = await unusedPort();
    server = await startEvalgate(
      ['serve', '--workers', '2', '--port', String(port)],
      {
        EVALGATE_DATABASE_URL: db.url,
        EVALGATE_DATA_DIR: db.dataDir,
        EVALGATE_MODEL_CONCURRENCY: '1',
        EVALGATE_RUN_CHUNK_SIZE: '2',
        EVALGATE_BUDGET_CACHE_MS: '200',
        ...(testDbKind() === 'postgres'
          ? {
              EVALGATE_REDIS_URL: 'redis://127.0.0.1:6379',
              EVALGATE_REDIS_PREFIX: `egt-budget-cluster-${randomBytes(4).toString('hex')}`,
            }
          : {}),
      },
      /Dashboard:/,
      60_000,
    );
    admin = /(eg_[0-9A-Za-z]{43})/.exec(server.output())?.[1] ?? '';
    expect(admin).not.toBe('');
    expect(descendants(server.pid, 'serve')).toHaveLength(2);
    const model = await call('POST', '/v1/models', admin, {
      label: 'priced',
      base_url: mock.baseUrl,
      upstream_model: 'priced-upstream',
      input_price_per_mtok: 2,
      output_price_per_mtok: 10,
    });
    expect(model.status).toBe(201);
  }, 90_000);

  afterAll(async () => {
    await server?.kill();
    await mock?.close();
    await db?.drop();
  });

  const routes: [string, string, unknown, Record<string, string>][] = [
    ['/v1/chat/completions', 'chat', { model: 'priced', messages: [{ role: 'user', content: 'Hi' }] }, {}],
    ['/v1/responses', 'responses', { model: 'priced', input: 'Hi' }, {}],
    [
      '/v1/messages',
      'messages',
      { model: 'priced', max_tokens: 20, messages: [{ role: 'user', content: 'Hi' }] },
      { 'anthropic-version': '2023-06-01' },
    ],
  ];

  it.each(routes)(
    "stops a key's %s calls within one call of its daily limit across both workers",
    async (path, _name, body, headers) => {
      const limit = COST * 4.5;
      const created = await call('POST', '/v1/api-keys', admin, {
        name: `budget-${path}`,
        permissions: ['inference:write', 'keys:read'],
        budget: { limit_usd: limit, period: 'day' },
      });
      expect(created.status).toBe(201);
      const key = created.body.key as string;
      // The other worker may hold the project's budgets from before for EVALGATE_BUDGET_CACHE_MS (200 ms).
      await new Promise((r) => setTimeout(r, 400));
      let passed = 0;
      let refusal: FreshReply | null = null;
      for (let i = 0; i < 20 && !refusal; i++) {
        const res = await call('POST', path, key, body, headers);
        if (res.status === 200) passed++;
        else refusal = res;
      }
      expect(passed).toBe(5);
      expect(refusal?.status).toBe(429);
      if (path === '/v1/messages') expect(refusal?.body.error.type).toBe('rate_limit_error');
      else expect(refusal?.body.error.code).toBe('budget_exceeded');
      const retryAfter = Number(refusal?.headers['retry-after']);
      expect(retryAfter).toBeGreaterThan(0);
      expect(retryAfter).toBeLessThanOrEqual(86_400);
      // Refused by both workers.
      for (let i = 0; i < 4; i++) expect((await call('POST', path, key, body, headers)).status).toBe(429);
      const view = await call('GET', `/v1/api-keys/${created.body.id}`, key);
      expect(view.body.spend.used_usd).toBeCloseTo(5 * COST, 9);
      expect(view.body.spend.used_usd).toBeLessThan(limit + COST);
    },
  );

  it('64 concurrent calls over both workers against a $0.05 key budget stop within one reservation per worker', async () => {
    // 12 prompt and 7 completion tokens at 100 and 1000 USD per million: $0.0082 a call.
    const actual = (12 * 100 + 7 * 1000) / 1e6;
    const limit = 0.05;
    const body = { model: 'dear', messages: [{ role: 'user', content: 'Hi' }], max_tokens: 10 };
    const estimate = maxCallCost(
      { inputPricePerMtok: 100, outputPricePerMtok: 1000, defaultParameters: {} },
      body,
      JSON.stringify(body),
    );
    const model = await call('POST', '/v1/models', admin, {
      label: 'dear',
      base_url: mock.baseUrl,
      upstream_model: 'dear-upstream',
      input_price_per_mtok: 100,
      output_price_per_mtok: 1000,
    });
    expect(model.status).toBe(201);
    const created = await call('POST', '/v1/api-keys', admin, {
      name: 'budget-burst',
      permissions: ['inference:write', 'keys:read'],
      budget: { limit_usd: limit, period: 'day' },
    });
    expect(created.status).toBe(201);
    const key = created.body.key as string;
    await new Promise((r) => setTimeout(r, 400));
    // The calls overlap: each answer takes a while. Every call on a connection of its own, so both
    // workers take some.
    mock.set({ latencyMs: 60 });
    let answered = 0;
    let refused = 0;
    try {
      for (let round = 0; round < 6; round++) {
        const replies = await Promise.all(
          Array.from({ length: 64 }, () => call('POST', '/v1/chat/completions', key, body)),
        );
        for (const r of replies) {
          expect([200, 429]).toContain(r.status);
          if (r.status === 429) expect(r.body.error.code).toBe('budget_exceeded');
        }
        const ok = replies.filter((r) => r.status === 200).length;
        answered += ok;
        refused += replies.length - ok;
        if (ok === 0) break;
      }
    } finally {
      mock.set({ latencyMs: 0 });
    }
    const spent = (await call('GET', `/v1/api-keys/${created.body.id}`, key)).body.spend.used_usd;
    expect(refused).toBeGreaterThan(0);
    expect(spent).toBeCloseTo(answered * actual, 9);
    expect(spent).toBeGreaterThanOrEqual(limit);
    // Each worker may have one reservation in flight when the other settles past the limit.
    expect(spent).toBeLessThan(limit + 2 * estimate);
  }, 90_000);

  it('stops a run spread over both workers once the project budget is spent, keeping its results', async () => {
    // The main project's budget (the key budgets above are separate from it).
    const put = await call('PUT', '/v1/projects/current/budget', admin, {
      limit_usd: COST * 40,
      period: 'month',
    });
    expect(put.status).toBe(200);
    await new Promise((r) => setTimeout(r, 400));
    // Spend counts from when a budget is set: what the calls above paid is not in it.
    expect(put.body.spend.used_usd).toBe(0);
    mock.set({ reply: () => ({ json: { score: 1, reasoning: 'fine' } }) });
    const items = Array.from({ length: 60 }, (_, i) => ({ input: `q${i}`, output: `a${i}` }));
    expect((await call('POST', '/v1/containers', admin, { label: 'c' })).status).toBe(201);
    expect((await call('POST', '/v1/datasets', admin, { label: 'd', items })).status).toBe(201);
    const ev = await call('POST', '/v1/evaluators', admin, {
      type: 'judge',
      name: 'j',
      model: 'priced',
      prompt: 'Rate {{output}}',
    });
    expect(ev.status).toBe(201);
    const src = { type: 'dataset', dataset: 'd', range: '0:60' };
    const run = await call('POST', '/v1/evaluation/runs', admin, {
      container: 'c',
      evaluators: [ev.body.id],
      sample: src,
      ground_truth: src,
    });
    expect(run.status).toBe(201);
    let ended: any = null;
    await waitFor(
      async () => {
        ended = (await call('GET', `/v1/evaluation/runs/${run.body.id}`, admin)).body;
        return Boolean(ended.finished_at);
      },
      60_000,
      'the run to end',
    );
    expect(ended.error).toMatchObject({ code: 'budget_exceeded' });
    const samples = (await call('GET', `/v1/evaluation/runs/${run.body.id}/samples?limit=100`, admin)).body
      .data;
    expect(samples).toHaveLength(60);
    const scored = samples.filter((s: any) => s.status === 'scored').length;
    const refused = samples.filter((s: any) => s.error?.code === 'budget_exceeded').length;
    // 40 calls reach the limit; each worker may have had one more call in flight.
    expect(scored).toBeGreaterThanOrEqual(40);
    expect(scored).toBeLessThanOrEqual(42);
    expect(scored + refused).toBe(60);
    const spend = (await call('GET', '/v1/projects/current/budget', admin)).body.spend;
    expect(spend.used_usd).toBeCloseTo(scored * COST, 9);
    // The gateway refuses the project's calls on both workers now.
    for (let i = 0; i < 4; i++) {
      const res = await call('POST', '/v1/chat/completions', admin, {
        model: 'priced',
        messages: [{ role: 'user', content: 'Hi' }],
      });
      expect(res.status).toBe(429);
      expect(res.body.error.details.scope).toBe('project');
    }
  }, 90_000);
});
