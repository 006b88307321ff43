import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type MockUpstream, startMockUpstream } from '../fixtures/mock-upstream.js';
import { type Harness, startHarness, type TestKey } from '../helpers/harness.js';

/*
 * `POST /v1/fine_tuning/alpha/graders/run` pays for its model calls like the gateway: a score_model
 * grader's judge call is counted on the key's and the project's budget spend, and a spent budget refuses
 * it with 429 budget_exceeded before the judge is called.
 */

/** 20 prompt and 5 completion tokens at 2 and 10 USD per million. */
const COST = (20 * 2 + 5 * 10) / 1e6;

let h: Harness;
let mock: MockUpstream;
beforeAll(async () => {
  mock = await startMockUpstream({
    reply: () => ({ json: { score: 0.5, reasoning: 'fine' }, promptTokens: 20, completionTokens: 5 }),
  });
  h = await startHarness();
});
afterAll(async () => {
  await h?.close();
  await mock?.close();
});

const grader = {
  type: 'score_model',
  name: 'quality',
  model: 'judge',
  input: [{ role: 'user', content: 'Grade {{sample.output_text}}' }],
  range: [0, 1],
  sampling_params: { max_completions_tokens: 20 },
};

async function project(): Promise<{ owner: TestKey; as: (m: string, p: string, b?: unknown) => any }> {
  const owner = await h.key(['*'], `graders-budget-${randomBytes(3).toString('hex')}`);
  const as = (method: string, path: string, body?: unknown) => h.call(method, path, { key: owner.key, body });
  const model = await as('POST', '/v1/models', {
    label: 'judge',
    base_url: mock.baseUrl,
    upstream_model: 'judge',
    input_price_per_mtok: 2,
    output_price_per_mtok: 10,
  });
  expect(model.status, model.text).toBe(201);
  return { owner, as };
}

const gradeWith = (key: string) =>
  h.call('POST', '/v1/fine_tuning/alpha/graders/run', { key, body: { grader, model_sample: 'ok' } });

describe('graders/run pays like the gateway', () => {
  it("counts a score_model grader's spend on the key and refuses it at a spent key budget", async () => {
    const { as } = await project();
    const created = await as('POST', '/v1/api-keys', {
      name: 'grading',
      permissions: ['evaluation:write', 'models:read', 'inference:write', 'keys:read'],
      budget: { limit_usd: COST * 1.5, period: 'day' },
    });
    expect(created.status, created.text).toBe(201);
    const key = created.body.key as string;
    const first = await gradeWith(key);
    expect(first.status, first.text).toBe(200);
    expect(first.body.reward).toBe(0.5);
    const second = await gradeWith(key);
    expect(second.status).toBe(200);
    const view = await h.call('GET', `/v1/api-keys/${created.body.id}`, { key });
    expect(view.body.spend.used_usd).toBeCloseTo(2 * COST, 9);
    const calls = mock.stats.requests;
    const refused = await gradeWith(key);
    expect(refused.status).toBe(429);
    expect(refused.body.error.code).toBe('budget_exceeded');
    expect(refused.body.error.details).toMatchObject({ scope: 'key', period: 'day' });
    expect(refused.headers.get('retry-after')).not.toBeNull();
    expect(mock.stats.requests).toBe(calls);
  });

  it("counts its spend on the project's budget and refuses it there; another project's spend is untouched", async () => {
    const { owner, as } = await project();
    const other = await project();
    const set = await as('PUT', '/v1/projects/current/budget', { limit_usd: COST / 2, period: 'month' });
    expect(set.status).toBe(200);
    expect(
      (await other.as('PUT', '/v1/projects/current/budget', { limit_usd: 1, period: 'month' })).status,
    ).toBe(200);
    const first = await gradeWith(owner.key);
    expect(first.status, first.text).toBe(200);
    const spend = (await as('GET', '/v1/projects/current/budget')).body.spend;
    expect(spend.used_usd).toBeCloseTo(COST, 9);
    const calls = mock.stats.requests;
    const refused = await gradeWith(owner.key);
    expect(refused.status).toBe(429);
    expect(refused.body.error.code).toBe('budget_exceeded');
    expect(refused.body.error.details).toMatchObject({ scope: 'project', period: 'month' });
    expect(mock.stats.requests).toBe(calls);
    // The project's own budget is not readable through another project's key.
    const foreign = await other.as('GET', `/v1/projects/${owner.projectId}/budget`);
    expect(foreign.status).toBe(404);
    expect((await other.as('GET', '/v1/projects/current/budget')).body.spend.used_usd).toBe(0);
  });
});
