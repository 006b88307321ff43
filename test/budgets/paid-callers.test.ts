import { randomBytes } from 'node:crypto';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type MockUpstream, startMockUpstream } from '../fixtures/mock-upstream.js';
import { testDbKind } from '../helpers/databases.js';
import { type Harness, startHarness, type TestKey } from '../helpers/harness.js';
import { waitFor } from '../helpers/wait.js';

/*
 * Where the spend of the paid callers beside the gateway lands, counted against the provider: a run's
 * generations (with its judges) and a judge monitor's scoring. Each project calls upstream models of
 * its own name, so the mock's answered calls are counted per project; every answer is 10 prompt and 5
 * completion tokens, so each call costs the same. And a run that will call a model is refused at
 * creation once the budget is spent (#36), with the gateway's 429 budget_exceeded.
 */

/** 10 prompt and 5 completion tokens at 2 and 10 USD per million. */
const COST = (10 * 2 + 5 * 10) / 1e6;
const PRICES = { input_price_per_mtok: 2, output_price_per_mtok: 10 };

let h: Harness;
let mock: MockUpstream;
/** Answered calls by upstream model. */
const answered = new Map<string, number>();

beforeAll(async () => {
  mock = await startMockUpstream({
    reply: (req) => {
      const model = String(req.body.model);
      answered.set(model, (answered.get(model) ?? 0) + 1);
      if (model.startsWith('judge-')) {
        return { json: { score: 1, reasoning: 'fine' }, promptTokens: 10, completionTokens: 5 };
      }
      return { text: `answer to ${req.lastUserText}`, promptTokens: 10, completionTokens: 5 };
    },
  });
  h = await startHarness({
    env: {
      EVALGATE_MODEL_CONCURRENCY: '1',
      EVALGATE_RUN_CHUNK_SIZE: '2',
      EVALGATE_RUN_POLL_MS: '100',
      EVALGATE_LOG_FLUSH_MS: '50',
      ...(testDbKind() === 'postgres'
        ? {
            EVALGATE_REDIS_URL: 'redis://127.0.0.1:6379',
            EVALGATE_REDIS_PREFIX: `egt-paid-${randomBytes(4).toString('hex')}`,
          }
        : {}),
    },
  });
}, 60_000);
afterAll(async () => {
  await h?.close();
  await mock?.close();
});

interface Project {
  owner: TestKey;
  tag: string;
  as: (method: string, path: string, body?: unknown, key?: string) => Promise<any>;
  /** The provider's answered calls for this project's models. */
  calls(): number;
  spend(): Promise<number>;
}

/** A project with priced models `gen` and `judge`, container `c`, judge evaluator `j` and a budget. */
async function project(budget: { limit_usd: number; period: string }): Promise<Project> {
  const tag = randomBytes(3).toString('hex');
  const owner = await h.key(['*'], `paid-callers-${tag}`);
  const as = (method: string, path: string, body?: unknown, key?: string) =>
    h.call(method, path, { key: key ?? owner.key, body });
  for (const label of ['gen', 'judge']) {
    const r = await as('POST', '/v1/models', {
      label,
      base_url: mock.baseUrl,
      upstream_model: `${label}-${tag}`,
      ...PRICES,
    });
    expect(r.status, r.text).toBe(201);
  }
  expect((await as('POST', '/v1/containers', { label: 'c' })).status).toBe(201);
  const ev = await as('POST', '/v1/evaluators', {
    type: 'judge',
    name: 'j',
    model: 'judge',
    prompt: 'Rate {{output}}',
    pass_threshold: 0.5,
  });
  expect(ev.status, ev.text).toBe(201);
  expect((await as('PUT', '/v1/projects/current/budget', budget)).status).toBe(200);
  return {
    owner,
    tag,
    as,
    calls: () => (answered.get(`gen-${tag}`) ?? 0) + (answered.get(`judge-${tag}`) ?? 0),
    spend: async () => {
      const res = await as('GET', `/v1/projects/${owner.projectId}/budget`);
      expect(res.status).toBe(200);
      return res.body.spend.used_usd;
    },
  };
}

async function generationRun(p: Project, items: number): Promise<any> {
  const rows = Array.from({ length: items }, (_, i) => ({ input: `question ${i}` }));
  expect((await p.as('POST', '/v1/datasets', { label: 'd', items: rows })).status).toBe(201);
  const run = await p.as('POST', '/v1/evaluation/runs', {
    container: 'c',
    evaluators: ['j'],
    sample: { type: 'generate', models: ['gen'] },
    ground_truth: { type: 'dataset', dataset: 'd', range: `0:${items}` },
  });
  expect(run.status, run.text).toBe(201);
  let ended: any = null;
  await waitFor(
    async () => {
      ended = (await p.as('GET', `/v1/evaluation/runs/${run.body.id}`)).body;
      return ended.finished_at !== null && ended.finished_at !== undefined;
    },
    30_000,
    'the run to end',
  );
  return ended;
}

describe(`spend of a run's generations (${testDbKind()})`, () => {
  it("lands on the project: the provider's answered generation and judge calls, priced", async () => {
    const p = await project({ limit_usd: 1, period: 'total' });
    const run = await generationRun(p, 6);
    expect(run.status).toBe('completed');
    expect(answered.get(`gen-${p.tag}`)).toBe(6);
    expect(answered.get(`judge-${p.tag}`)).toBe(6);
    expect(await p.spend()).toBeCloseTo(12 * COST, 9);
    expect(run.spend).toBeCloseTo(12 * COST, 9);
  });

  it('stops at the project budget with budget_exceeded; spend equals the answered calls', async () => {
    const p = await project({ limit_usd: COST * 3.5, period: 'total' });
    const run = await generationRun(p, 6);
    expect(run.error).toMatchObject({ code: 'budget_exceeded' });
    const calls = p.calls();
    // Generations and judges are two models, so two calls (each reserving its largest cost) may be in
    // flight: the run stops after at most four answered calls, and at least one went through.
    expect(calls).toBeGreaterThanOrEqual(1);
    expect(calls).toBeLessThanOrEqual(4);
    expect(answered.get(`gen-${p.tag}`)).toBeGreaterThanOrEqual(1);
    const spend = await p.spend();
    expect(spend).toBeCloseTo(calls * COST, 9);
    expect(spend).toBeLessThan(COST * 3.5 + COST);
    const samples = (await p.as('GET', `/v1/evaluation/runs/${run.id}/samples?limit=100`)).body.data;
    expect(samples.some((s: any) => s.error?.code === 'budget_exceeded')).toBe(true);
  });
});

describe(`spend of a judge monitor (${testDbKind()})`, () => {
  async function monitored(p: Project, calls: number): Promise<any> {
    const m = await p.as('POST', '/v1/monitors', {
      name: 'm',
      container: 'c',
      evaluators: ['j'],
      sampling_rate: 1,
    });
    expect(m.status, m.text).toBe(201);
    const client = new OpenAI({
      apiKey: p.owner.key,
      baseURL: `${h.url}/v1`,
      defaultHeaders: { 'X-Evalgate-Container': 'c' },
      maxRetries: 0,
    });
    for (let i = 0; i < calls; i++) {
      await client.chat.completions.create({ model: 'gen', messages: [{ role: 'user', content: `q${i}` }] });
    }
    await h.app.services.logWriter.flush();
    let view: any = null;
    await waitFor(
      async () => {
        view = (await p.as('GET', `/v1/monitors/${m.body.id}`)).body;
        if (view.selected !== calls) return false;
        const r = await p.as('GET', `/v1/monitors/${m.body.id}/results`);
        const t = r.body.totals[0];
        return t !== undefined && t.num_scored + t.num_errors === calls;
      },
      30_000,
      'the monitor to score every call',
    );
    const samples = (await p.as('GET', `/v1/monitors/${m.body.id}/samples?limit=100`)).body.data;
    return { view, samples };
  }

  it("lands on the project: the gateway's calls and the monitor's judge calls, priced", async () => {
    const p = await project({ limit_usd: 1, period: 'total' });
    const { samples } = await monitored(p, 4);
    expect(samples).toHaveLength(4);
    expect(answered.get(`gen-${p.tag}`)).toBe(4);
    expect(answered.get(`judge-${p.tag}`)).toBe(4);
    await waitFor(async () => (await p.spend()) >= 8 * COST - 1e-12, 10_000, 'the spend to be counted');
    expect(await p.spend()).toBeCloseTo(8 * COST, 9);
  });

  it('is refused at a spent project budget: the judge is not called, its samples say budget_exceeded', async () => {
    const p = await project({ limit_usd: COST * 2.5, period: 'total' });
    const { samples } = await monitored(p, 2);
    // The two gateway calls and one judge call pass; the other judge call finds the budget spent.
    expect(answered.get(`gen-${p.tag}`)).toBe(2);
    expect(answered.get(`judge-${p.tag}`)).toBe(1);
    expect(samples.filter((s: any) => s.error?.code === 'budget_exceeded')).toHaveLength(1);
    expect(await p.spend()).toBeCloseTo(3 * COST, 9);
  });
});

describe(`a run checks the budget before it is created (${testDbKind()})`, () => {
  it('a run that would call a model at a spent project budget: 429 budget_exceeded, no run stored', async () => {
    const p = await project({ limit_usd: COST / 2, period: 'total' });
    expect(
      (await p.as('POST', '/v1/datasets', { label: 'd', items: [{ input: 'q', output: 'a' }] })).status,
    ).toBe(201);
    const gateway = await p.as('POST', '/v1/chat/completions', {
      model: 'gen',
      messages: [{ role: 'user', content: 'spend it' }],
    });
    expect(gateway.status).toBe(200);
    const before = p.calls();
    const src = { type: 'dataset', dataset: 'd', range: '0:1' };
    const judged = await p.as('POST', '/v1/evaluation/runs', {
      container: 'c',
      evaluators: ['j'],
      sample: src,
      ground_truth: src,
    });
    expect(judged.status, judged.text).toBe(429);
    expect(judged.body.error).toMatchObject({ code: 'budget_exceeded', details: { scope: 'project' } });
    const generated = await p.as('POST', '/v1/evaluation/runs', {
      container: 'c',
      evaluators: ['j'],
      sample: { type: 'generate', models: ['gen'] },
      ground_truth: src,
    });
    expect(generated.status).toBe(429);
    expect(generated.body.error.code).toBe('budget_exceeded');
    expect((await p.as('GET', '/v1/evaluation/runs')).body.total).toBe(0);
    expect(p.calls()).toBe(before);

    // A run that calls no model is not the budget's business.
    const exact = await p.as('POST', '/v1/evaluators', {
      type: 'string_check',
      name: 'exact',
      input: '{{sample.output_text}}',
      reference: 'a',
      operation: 'eq',
    });
    expect(exact.status, exact.text).toBe(201);
    const free = await p.as('POST', '/v1/evaluation/runs', {
      container: 'c',
      evaluators: ['exact'],
      sample: src,
      ground_truth: src,
    });
    expect(free.status, free.text).toBe(201);
  });

  it("an eval run with a score_model grader at a spent budget: the SDK's RateLimitError, nothing stored", async () => {
    const p = await project({ limit_usd: COST / 2, period: 'total' });
    const client = new OpenAI({ apiKey: p.owner.key, baseURL: `${h.url}/v1`, maxRetries: 0 });
    await client.chat.completions.create({ model: 'gen', messages: [{ role: 'user', content: 'spend it' }] });
    const ev = await client.evals.create({
      data_source_config: { type: 'custom', item_schema: { type: 'object' }, include_sample_schema: true },
      testing_criteria: [
        {
          type: 'score_model',
          name: 'quality',
          model: 'judge',
          input: [{ role: 'user', content: 'Grade {{sample.output_text}}' }],
          range: [0, 1],
        },
      ],
    });
    const refusal: any = await client.evals.runs
      .create(ev.id, {
        data_source: {
          type: 'jsonl',
          source: { type: 'file_content', content: [{ item: {}, sample: { output_text: 'ok' } }] },
        },
      })
      .catch((e) => e);
    expect(refusal).toBeInstanceOf(OpenAI.RateLimitError);
    expect(refusal.code).toBe('budget_exceeded');
    expect((await client.evals.runs.list(ev.id)).data).toHaveLength(0);
  });

  it("a spent key budget refuses the key's runs; another key of the project still creates them", async () => {
    const p = await project({ limit_usd: 1, period: 'total' });
    const created = await p.as('POST', '/v1/api-keys', {
      name: 'narrow-budget',
      permissions: ['*'],
      budget: { limit_usd: COST / 2, period: 'total' },
    });
    expect(created.status, created.text).toBe(201);
    const key = created.body.key as string;
    expect(
      (
        await p.as(
          'POST',
          '/v1/chat/completions',
          { model: 'gen', messages: [{ role: 'user', content: 'x' }] },
          key,
        )
      ).status,
    ).toBe(200);
    expect(
      (await p.as('POST', '/v1/datasets', { label: 'd', items: [{ input: 'q', output: 'a' }] })).status,
    ).toBe(201);
    const src = { type: 'dataset', dataset: 'd', range: '0:1' };
    const body = { container: 'c', evaluators: ['j'], sample: src, ground_truth: src };
    const refused = await p.as('POST', '/v1/evaluation/runs', body, key);
    expect(refused.status).toBe(429);
    expect(refused.body.error).toMatchObject({ code: 'budget_exceeded', details: { scope: 'key' } });
    expect((await p.as('POST', '/v1/evaluation/runs', body)).status).toBe(201);
  });
});
