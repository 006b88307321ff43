import { randomBytes } from 'node:crypto';
import Anthropic from '@anthropic-ai/sdk';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Gateway, startGateway } from '../gateway/gateway-helpers.js';
import { testDbKind } from '../helpers/databases.js';
import type { TestKey } from '../helpers/harness.js';
import { waitFor } from '../helpers/wait.js';

/*
 * Spend limits through the official SDKs, in one process: on SQLite the counter is this process's memory;
 * on PostgreSQL it is Redis (as in scale-out), with the database behind it.
 */

const PRICES = { input_price_per_mtok: 2, output_price_per_mtok: 10 };
/** What one call to the mock costs: 12 prompt and 7 completion tokens at the prices above. */
const CHAT_COST = (12 * 2 + 7 * 10) / 1e6;

let g: Gateway;
beforeAll(async () => {
  g = await startGateway({
    EVALGATE_MODEL_CONCURRENCY: '1',
    EVALGATE_RUN_CHUNK_SIZE: '4',
    ...(testDbKind() === 'postgres'
      ? {
          EVALGATE_REDIS_URL: 'redis://127.0.0.1:6379',
          EVALGATE_REDIS_PREFIX: `egt-budgets-${randomBytes(4).toString('hex')}`,
        }
      : {}),
  });
  g.mock.set({ reply: () => 'Hello from the mock upstream.' });
  const res = await g.h.call('POST', '/v1/models', {
    body: { label: 'priced', base_url: g.mock.baseUrl, upstream_model: 'priced-upstream', ...PRICES },
  });
  expect(res.status).toBe(201);
});
afterAll(async () => {
  await g?.close();
});

async function keyWithBudget(budget: { limit_usd: number; period: string }): Promise<TestKey> {
  const res = await g.h.call('POST', '/v1/api-keys', {
    body: { name: 'budgeted', permissions: ['inference:write', 'keys:read'], budget },
  });
  expect(res.status).toBe(201);
  expect(res.body.budget).toEqual(budget);
  expect(res.body.spend).toMatchObject({ used_usd: 0, limit_usd: budget.limit_usd });
  return { key: res.body.key, id: res.body.id, projectId: res.body.project_id };
}

const secondsToMidnight = () =>
  Math.ceil((Math.ceil(Date.now() / 86_400_000) * 86_400_000 - Date.now()) / 1000);

/** Calls until the key is refused (at most 20 times); the refusal and the number of calls that passed. */
async function spendUntilRefused(call: () => Promise<unknown>): Promise<{ passed: number; refusal: any }> {
  for (let passed = 0; passed < 20; passed++) {
    try {
      await call();
    } catch (err) {
      return { passed, refusal: err };
    }
  }
  throw new Error('never refused');
}

const openai = (key: string) => new OpenAI({ baseURL: `${g.h.url}/v1`, apiKey: key, maxRetries: 0 });
const anthropic = (key: string) => new Anthropic({ baseURL: g.h.url, apiKey: key, maxRetries: 0 });

const routes: [string, number, (key: string) => Promise<unknown>][] = [
  [
    'chat completions',
    CHAT_COST,
    (key) =>
      openai(key).chat.completions.create({ model: 'priced', messages: [{ role: 'user', content: 'Hi' }] }),
  ],
  [
    'streamed chat completions',
    CHAT_COST,
    async (key) => {
      const stream = await openai(key).chat.completions.create({
        model: 'priced',
        messages: [{ role: 'user', content: 'Hi' }],
        stream: true,
        stream_options: { include_usage: true },
      });
      for await (const _ of stream);
    },
  ],
  ['responses', CHAT_COST, (key) => openai(key).responses.create({ model: 'priced', input: 'Hi' })],
  [
    'messages',
    CHAT_COST,
    (key) =>
      anthropic(key).messages.create({
        model: 'priced',
        max_tokens: 50,
        messages: [{ role: 'user', content: 'Hi' }],
      }),
  ],
  [
    'embeddings',
    (24 * 2) / 1e6,
    (key) => openai(key).embeddings.create({ model: 'priced', input: ['one', 'two'] }),
  ],
];

describe.each(routes)('a key budget on %s', (_route, cost, call) => {
  it('stops the key within one call of its limit: 429 budget_exceeded, Retry-After to midnight UTC', async () => {
    const limit = cost * 2.5;
    const key = await keyWithBudget({ limit_usd: limit, period: 'day' });
    const { passed, refusal } = await spendUntilRefused(() => call(key.key));
    expect(passed).toBe(3);
    expect(refusal.status).toBe(429);
    const isAnthropic = refusal instanceof Anthropic.APIError;
    if (isAnthropic) {
      expect(refusal).toBeInstanceOf(Anthropic.RateLimitError);
      expect(refusal.error).toMatchObject({ type: 'error', error: { type: 'rate_limit_error' } });
    } else {
      expect(refusal).toBeInstanceOf(OpenAI.RateLimitError);
      expect(refusal.code).toBe('budget_exceeded');
      expect(refusal.error.details).toMatchObject({ scope: 'key', period: 'day', limit_usd: limit });
    }
    expect(refusal.message).toMatch(/daily budget/);
    const retryAfter = Number(refusal.headers.get('retry-after'));
    expect(Math.abs(retryAfter - secondsToMidnight())).toBeLessThanOrEqual(5);
    expect(refusal.headers.get('x-should-retry')).toBe('false');
    const upstreamCalls = g.mock.stats.requests;
    await expect(call(key.key)).rejects.toMatchObject({ status: 429 });
    expect(g.mock.stats.requests).toBe(upstreamCalls);
    // The spend so far, readable on the key: past the limit by less than one call.
    const view = await g.h.call('GET', `/v1/api-keys/${key.id}`, { key: key.key });
    expect(view.status).toBe(200);
    expect(view.body.spend.used_usd).toBeGreaterThanOrEqual(limit);
    expect(view.body.spend.used_usd).toBeLessThan(limit + cost);
    expect(view.body.spend.used_usd).toBeCloseTo(3 * cost, 9);
    expect(new Date(view.body.spend.resets_at).getTime() - Date.now()).toBeLessThanOrEqual(86_400_000);
  });
});

describe('budgets', () => {
  it('a total budget refuses without Retry-After; raising it lets the key go on; removing it too', async () => {
    const key = await keyWithBudget({ limit_usd: CHAT_COST / 2, period: 'total' });
    const chat = () =>
      openai(key.key).chat.completions.create({
        model: 'priced',
        messages: [{ role: 'user', content: 'Hi' }],
      });
    await chat();
    const refusal: any = await chat().catch((e) => e);
    expect(refusal).toBeInstanceOf(OpenAI.RateLimitError);
    expect(refusal.headers.get('retry-after')).toBeNull();
    expect(refusal.message).toMatch(/total budget/);
    const raised = await g.h.call('PATCH', `/v1/api-keys/${key.id}`, {
      body: { budget: { limit_usd: CHAT_COST * 10, period: 'total' } },
    });
    expect(raised.status).toBe(200);
    expect(raised.body.spend).toMatchObject({ limit_usd: CHAT_COST * 10, resets_at: null });
    expect(raised.body.spend.used_usd).toBeCloseTo(CHAT_COST, 9);
    await chat();
    const removed = await g.h.call('PATCH', `/v1/api-keys/${key.id}`, {
      body: { budget: null, name: 'free' },
    });
    expect(removed.body).toMatchObject({ name: 'free', budget: null, spend: null });
    await chat();
    const listed = await g.h.call('GET', '/v1/api-keys?limit=100');
    expect(listed.body.data.find((k: any) => k.id === key.id)).toMatchObject({ budget: null });
  });

  it("a project budget stops its gateway calls and its runs with budget_exceeded, keeping the run's results", async () => {
    const owner = await g.h.key(['*'], `budget-project-${randomBytes(3).toString('hex')}`);
    const as = (method: string, path: string, body?: unknown) =>
      g.h.call(method, path, { key: owner.key, body });
    expect(
      (
        await as('POST', '/v1/models', {
          label: 'judge',
          base_url: g.mock.baseUrl,
          upstream_model: 'j',
          ...PRICES,
        })
      ).status,
    ).toBe(201);
    const set = await as('PUT', '/v1/projects/current/budget', {
      limit_usd: CHAT_COST * 5.5,
      period: 'month',
    });
    expect(set.status).toBe(200);
    expect(set.body).toMatchObject({
      object: 'project_budget',
      project_id: owner.projectId,
      budget: { limit_usd: CHAT_COST * 5.5, period: 'month' },
      spend: { used_usd: 0 },
    });
    g.mock.set({ reply: () => ({ json: { score: 1, reasoning: 'fine' } }) });
    try {
      const items = Array.from({ length: 20 }, (_, i) => ({ input: `q${i}`, output: `a${i}` }));
      expect((await as('POST', '/v1/containers', { label: 'c' })).status).toBe(201);
      expect((await as('POST', '/v1/datasets', { label: 'd', items })).status).toBe(201);
      const ev = await as('POST', '/v1/evaluators', {
        type: 'judge',
        name: 'j',
        model: 'judge',
        prompt: 'Rate {{output}}',
      });
      expect(ev.status).toBe(201);
      const src = { type: 'dataset', dataset: 'd', range: '0:20' };
      const run = await as('POST', '/v1/evaluation/runs', {
        container: 'c',
        evaluators: [ev.body.id],
        sample: src,
        ground_truth: src,
      });
      expect(run.status).toBe(201);
      let ended: any = null;
      await waitFor(
        async () => {
          ended = (await as('GET', `/v1/evaluation/runs/${run.body.id}`)).body;
          return ended.finished_at !== null && ended.finished_at !== undefined;
        },
        30_000,
        'the run to end',
      );
      expect(ended.error).toMatchObject({ code: 'budget_exceeded' });
      const samples = (await as('GET', `/v1/evaluation/runs/${run.body.id}/samples?limit=100`)).body.data;
      expect(samples).toHaveLength(20);
      const scored = samples.filter((s: any) => s.status === 'scored');
      const refused = samples.filter((s: any) => s.error?.code === 'budget_exceeded');
      // One call in flight at a time: the run stops after the sixth paid call.
      expect(scored).toHaveLength(6);
      expect(refused).toHaveLength(14);
      const spend = (await as('GET', `/v1/projects/${owner.projectId}/budget`)).body.spend;
      expect(spend.used_usd).toBeCloseTo(6 * CHAT_COST, 9);
      // Its gateway calls are refused too, through any of its keys.
      const refusal: any = await openai(owner.key)
        .chat.completions.create({ model: 'judge', messages: [{ role: 'user', content: 'Hi' }] })
        .catch((e) => e);
      expect(refusal).toBeInstanceOf(OpenAI.RateLimitError);
      expect(refusal.error.details).toMatchObject({ scope: 'project', period: 'month' });
      expect(refusal.message).toMatch(/This project has spent/);
      const cleared = await as('DELETE', '/v1/projects/current/budget');
      expect(cleared.body).toMatchObject({ budget: null, spend: null });
    } finally {
      g.mock.set({ reply: () => 'Hello from the mock upstream.' });
    }
  });

  it("refuses invalid budgets (422 naming each problem), another project's keys (404) and wrong keys (401)", async () => {
    const bad = await g.h.call('POST', '/v1/api-keys', {
      body: { name: 'x', budget: { limit_usd: -1, period: 'week' } },
    });
    expect(bad.status).toBe(422);
    const locs = bad.body.detail.map((d: any) => d.loc.join('.'));
    expect(locs.some((l: string) => l.startsWith('body.budget'))).toBe(true);
    const extra = await g.h.call('PUT', '/v1/projects/current/budget', {
      body: { limit_usd: 1, period: 'day', x: 1 },
    });
    expect(extra.status).toBe(422);
    const missing = await g.h.call('PUT', '/v1/projects/current/budget', { body: { period: 'day' } });
    expect(missing.status).toBe(422);
    expect(JSON.stringify(missing.body.detail)).toContain('limit_usd');
    const empty = await g.h.call('PATCH', `/v1/api-keys/${g.h.admin.id}`, { body: {} });
    expect(empty.status).toBe(422);
    const own = await g.h.call('PATCH', `/v1/api-keys/${g.h.admin.id}`, {
      body: { budget: { limit_usd: 1, period: 'day' } },
    });
    expect(own.status).toBe(403);
    expect(own.body.error.code).toBe('permission_denied');

    const other = await g.h.key(['*'], `other-${randomBytes(3).toString('hex')}`);
    const target = await keyWithBudget({ limit_usd: 1, period: 'day' });
    for (const [method, path, body] of [
      ['GET', `/v1/api-keys/${target.id}`, undefined],
      ['PATCH', `/v1/api-keys/${target.id}`, { budget: null }],
      ['GET', `/v1/projects/${target.projectId}/budget`, undefined],
      ['PUT', `/v1/projects/${target.projectId}/budget`, { limit_usd: 0, period: 'day' }],
      ['DELETE', `/v1/projects/${target.projectId}/budget`, undefined],
    ] as const) {
      const res = await g.h.call(method, path, { key: other.key, body });
      expect(res.status, `${method} ${path}`).toBe(404);
      expect(res.body.error.code).toBe('not_found');
    }
    // Still set, as its own project sees it.
    expect((await g.h.call('GET', `/v1/api-keys/${target.id}`)).body.budget).toEqual({
      limit_usd: 1,
      period: 'day',
    });
    const wrong = await g.h.call('GET', '/v1/projects/current/budget', { key: `eg_${'0'.repeat(43)}` });
    expect(wrong.status).toBe(401);
    const readOnly = await g.h.key(['keys:read']);
    const denied = await g.h.call('PUT', '/v1/projects/current/budget', {
      key: readOnly.key,
      body: { limit_usd: 1, period: 'day' },
    });
    expect(denied.status).toBe(403);
  });
});
