import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type MockUpstream, startMockUpstream } from '../fixtures/mock-upstream.js';
import { type Harness, startHarness } from '../helpers/harness.js';
import { waitFor } from '../helpers/wait.js';

/** Every answered call is paid for and counted, also when its result is never used. */

let h: Harness;
let mock: MockUpstream;
// 12 prompt and 7 completion tokens per mock answer.
const GEN_COST = (12 * 3 + 7 * 5) / 1_000_000;

beforeAll(async () => {
  mock = await startMockUpstream({
    reply: (req) => (req.body.model === 'j' ? { json: { score: 1, reasoning: 'ok' } } : 'generated'),
  });
  h = await startHarness();
  await h.call('POST', '/v1/models', {
    body: { label: 'judge', provider: 'openai-compatible', base_url: mock.baseUrl, upstream_model: 'j' },
  });
  await h.call('POST', '/v1/models', {
    body: {
      label: 'gen',
      provider: 'openai-compatible',
      base_url: mock.baseUrl,
      upstream_model: 'g',
      input_price_per_mtok: 3,
      output_price_per_mtok: 5,
    },
  });
  await h.call('POST', '/v1/containers', { body: { label: 'c' } });
  const items = Array.from({ length: 6 }, (_, i) => ({ input: `q${i}`, output: `a${i}`, expected: `a${i}` }));
  await h.call('POST', '/v1/datasets', { body: { label: 'six', items } });
  await h.call('POST', '/v1/evaluators', {
    body: { type: 'judge', name: 'j', model: 'judge', prompt: 'Rate {{output}}' },
  });
});
afterAll(async () => {
  await h?.close();
  await mock?.close();
});

const run = async (id: string) => (await h.call('GET', `/v1/evaluation/runs/${id}`)).body;

describe('run accounting', () => {
  it('counts calls of a model without prices as unpriced, at 0 USD', async () => {
    mock.reset();
    const created = await h.call('POST', '/v1/evaluation/runs', {
      body: {
        container: 'c',
        evaluators: ['j'],
        sample: { type: 'dataset', dataset: 'six' },
        ground_truth: { type: 'dataset', dataset: 'six' },
      },
    });
    await waitFor(async () => (await run(created.body.id)).status === 'completed', 20_000);
    const done = await run(created.body.id);
    expect(done.metrics.judge).toEqual({
      calls: 6,
      unpriced_calls: 6,
      cost: 0,
      prompt_tokens: 72,
      completion_tokens: 42,
    });
    expect(done.spend).toBe(0);
  });

  it('pays for generations answered before a cancel, though no position was scored', async () => {
    mock.reset();
    // The judge never answers; the generations do.
    mock.fail({ hang: true, times: 1000, match: (req) => req.body.model === 'j' });
    const created = await h.call('POST', '/v1/evaluation/runs', {
      body: {
        container: 'c',
        evaluators: ['j'],
        sample: { type: 'generate', models: ['gen'] },
        ground_truth: { type: 'dataset', dataset: 'six' },
      },
    });
    expect(created.status).toBe(201);
    await waitFor(() => mock.requests.filter((r) => r.body.model === 'j').length >= 6, 20_000);
    expect((await h.call('POST', `/v1/evaluation/runs/${created.body.id}/cancel`)).status).toBe(200);
    await waitFor(async () => (await run(created.body.id)).status === 'cancelled', 10_000);
    const done = await run(created.body.id);
    expect(done.metrics.generation.calls).toBe(6);
    expect(done.metrics.generation.unpriced_calls).toBe(0);
    expect(done.metrics.judge.calls).toBe(0);
    expect(done.spend).toBeCloseTo(6 * GEN_COST, 12);
    expect(
      done.results.per_model[0].per_eval[Object.keys(done.results.per_model[0].per_eval)[0]!].num_scored,
    ).toBe(0);
  });
});
