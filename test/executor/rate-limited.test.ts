import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type MockUpstream, startMockUpstream } from '../fixtures/mock-upstream.js';
import { type Harness, startHarness } from '../helpers/harness.js';
import { waitFor } from '../helpers/wait.js';

let h: Harness;
let mock: MockUpstream;

beforeAll(async () => {
  mock = await startMockUpstream({ reply: () => ({ json: { score: 1, reasoning: 'ok' } }) });
  // A short bound on waiting without progress, so a provider that never recovers ends the run quickly.
  h = await startHarness({ env: { EVALGATE_RATE_LIMIT_MAX_WAIT_MS: '1500' } });
  await h.call('POST', '/v1/models', {
    body: { label: 'judge', provider: 'openai-compatible', base_url: mock.baseUrl, upstream_model: 'j' },
  });
  await h.call('POST', '/v1/containers', { body: { label: 'c' } });
  const items = Array.from({ length: 10 }, (_, i) => ({ input: `q${i}`, output: `a${i}` }));
  await h.call('POST', '/v1/datasets', { body: { label: 'ten', items } });
  await h.call('POST', '/v1/evaluators', {
    body: { type: 'judge', name: 'j', model: 'judge', prompt: 'Rate {{output}}' },
  });
});
afterAll(async () => {
  await h?.close();
  await mock?.close();
});

describe('a provider that answers 429 forever', () => {
  it('ends the run with rate_limited errors after the configured wait, never hanging', async () => {
    mock.fail({ status: 429, retryAfter: 1, times: 1_000_000 });
    const t0 = Date.now();
    const run = await h.call('POST', '/v1/evaluation/runs', {
      body: {
        container: 'c',
        evaluators: ['j'],
        sample: { type: 'dataset', dataset: 'ten' },
        ground_truth: { type: 'dataset', dataset: 'ten' },
      },
    });
    expect(run.status).toBe(201);
    await waitFor(
      async () => (await h.call('GET', `/v1/evaluation/runs/${run.body.id}`)).body.status === 'error',
      20_000,
    );
    const elapsed = Date.now() - t0;
    // It waited (Retry-After honoured) for about the bound, not much longer.
    expect(elapsed).toBeGreaterThanOrEqual(1000);
    expect(elapsed).toBeLessThan(10_000);
    const done = (await h.call('GET', `/v1/evaluation/runs/${run.body.id}`)).body;
    expect(done.error.code).toBe('rate_limited');
    const perEval = done.results.per_model[0].per_eval[Object.keys(done.results.per_model[0].per_eval)[0]!];
    expect(perEval).toMatchObject({ num_total: 10, num_errors: 10, num_scored: 0 });
    const samples = await h.call('GET', `/v1/evaluation/runs/${run.body.id}/samples?errored=true&limit=100`);
    expect(samples.body.data).toHaveLength(10);
    for (const s of samples.body.data) expect(s.error.code).toBe('rate_limited');
    // No call was answered: nothing to pay for.
    expect(done.spend).toBe(0);
    expect(done.metrics.judge.calls).toBe(0);
    // Once the run gave up, no more calls: the retries stopped.
    const after = mock.stats.requests;
    await new Promise((r) => setTimeout(r, 1500));
    expect(mock.stats.requests).toBe(after);
  }, 30_000);
});
