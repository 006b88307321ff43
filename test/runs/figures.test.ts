import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type MockUpstream, startMockUpstream } from '../fixtures/mock-upstream.js';
import { type Harness, startHarness } from '../helpers/harness.js';
import { waitFor } from '../helpers/wait.js';

// Money and spread without floating-point noise: 17 prompt tokens at $0.30/Mtok is
// 0.0000050999999999999995 in binary floating point; the contract shows it to 1e-10 USD.
let h: Harness;
let mock: MockUpstream;

beforeAll(async () => {
  mock = await startMockUpstream({
    reply: (req) =>
      req.body?.response_format
        ? { json: { score: 0.9, reasoning: 'same' }, promptTokens: 17, completionTokens: 0 }
        : { text: 'hi', promptTokens: 17, completionTokens: 0 },
  });
  h = await startHarness();
  const model = await h.call('POST', '/v1/models', {
    body: {
      label: 'priced',
      provider: 'openai-compatible',
      base_url: mock.baseUrl,
      upstream_model: 'up',
      input_price_per_mtok: 0.3,
      output_price_per_mtok: 0,
    },
  });
  expect(model.status, JSON.stringify(model.body)).toBe(201);
  await h.call('POST', '/v1/containers', { body: { label: 'c' } });
  const items = Array.from({ length: 20 }, (_, i) => ({ input: `q${i}`, output: `a${i}` }));
  expect((await h.call('POST', '/v1/datasets', { body: { label: 'twenty', items } })).status).toBe(201);
});
afterAll(async () => {
  await h?.close();
  await mock?.close();
});

describe('figures', () => {
  it('rounds the gateway cost header and the recorded cost to 1e-10 USD', async () => {
    const res = await h.call('POST', '/v1/chat/completions', {
      body: { model: 'priced', messages: [{ role: 'user', content: 'hello' }] },
    });
    expect(res.status).toBe(200);
    expect(res.headers.get('x-evalgate-cost')).toBe('0.0000051');
  });

  it('gives identical scores a stdev of exactly 0 and sample costs without noise', async () => {
    const judge = await h.call('POST', '/v1/evaluators', {
      body: { type: 'judge', name: 'flat', model: 'priced', prompt: 'Rate {{output}}' },
    });
    expect(judge.status, JSON.stringify(judge.body)).toBe(201);
    const src = { type: 'dataset', dataset: 'twenty', range: '0:20' };
    const created = await h.call('POST', '/v1/evaluation/runs', {
      body: { container: 'c', evaluators: [judge.body.id], sample: src },
    });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    const path = `/v1/evaluation/runs/${created.body.id}`;
    await waitFor(async () => (await h.call('GET', path)).body.status === 'completed', 60_000);
    const run = (await h.call('GET', path)).body;
    const perEval = run.results.per_model[0].per_eval[judge.body.id];
    expect(perEval.num_scored).toBe(20);
    expect(perEval.stdev).toBe(0);
    expect(perEval.stderr).toBe(0);
    expect(run.spend).toBe(0.000102);
    const samples = await h.call('GET', `${path}/samples?limit=20`);
    for (const s of samples.body.data) expect(s.cost).toBe(0.0000051);
  });
});
