import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type MockUpstream, startMockUpstream } from '../fixtures/mock-upstream.js';
import { type Harness, startHarness } from '../helpers/harness.js';
import { hasBwrap } from '../helpers/sandbox.js';
import { waitFor } from '../helpers/wait.js';

/** One rule each where the docs and the code used to disagree. */

let h: Harness;
let mock: MockUpstream;

beforeAll(async () => {
  mock = await startMockUpstream({
    reply: (req) => (req.body.model === 'j' ? { json: { score: 1, reasoning: 'ok' } } : 'generated'),
  });
  h = await startHarness();
  // 12 prompt tokens at 116.5 USD per million: 0.001398 per call, which sums with binary noise.
  await h.call('POST', '/v1/models', {
    body: {
      label: 'judge',
      provider: 'openai-compatible',
      base_url: mock.baseUrl,
      upstream_model: 'j',
      input_price_per_mtok: 116.5,
      output_price_per_mtok: 0,
    },
  });
  await h.call('POST', '/v1/models', {
    body: { label: 'gen', provider: 'openai-compatible', base_url: mock.baseUrl, upstream_model: 'g' },
  });
  await h.call('POST', '/v1/containers', { body: { label: 'c' } });
  const items = Array.from({ length: 8 }, (_, i) => ({
    input: `q${i}`,
    // Position 3 has no output.
    ...(i === 3 ? {} : { output: `a${i}` }),
    expected: `a${i}`,
  }));
  await h.call('POST', '/v1/datasets', { body: { label: 'd', items } });
  await h.call('POST', '/v1/evaluators', {
    body: { type: 'judge', name: 'j', model: 'judge', prompt: 'Rate {{output}}' },
  });
});
afterAll(async () => {
  await h?.close();
  await mock?.close();
});

async function finished(id: string) {
  await waitFor(
    async () =>
      ['completed', 'error', 'cancelled'].includes(
        (await h.call('GET', `/v1/evaluation/runs/${id}`)).body.status,
      ),
    20_000,
  );
  return (await h.call('GET', `/v1/evaluation/runs/${id}`)).body;
}

const firstEval = (run: any) =>
  run.results.per_model[0].per_eval[Object.keys(run.results.per_model[0].per_eval)[0]!];

describe('run semantics', () => {
  it.skipIf(!hasBwrap)(
    'counts a position without a sample output as missing for code evaluators too',
    async () => {
      await h.call('POST', '/v1/evaluators', {
        body: {
          type: 'code',
          name: 'exact',
          source:
            'def evaluate(sample, ground_truth, baseline):\n    return sample["output"] == ground_truth["expected"]\n',
        },
      });
      const run = await h.call('POST', '/v1/evaluation/runs', {
        body: {
          container: 'c',
          evaluators: ['exact'],
          sample: { type: 'dataset', dataset: 'd' },
          ground_truth: { type: 'dataset', dataset: 'd' },
        },
      });
      const done = await finished(run.body.id);
      expect(firstEval(done)).toMatchObject({ num_total: 8, num_scored: 7, num_missing: 1, num_errors: 0 });
    },
  );

  it('expects as many positions as a generate side can take from a shorter ground truth range', async () => {
    const run = await h.call('POST', '/v1/evaluation/runs', {
      body: {
        container: 'c',
        evaluators: ['j'],
        sample: { type: 'generate', models: ['gen'] },
        ground_truth: { type: 'dataset', dataset: 'd', range: '0:5' },
      },
    });
    const done = await finished(run.body.id);
    expect(firstEval(done)).toMatchObject({
      num_total: 5,
      expected_count: 5,
      break_reason: 'expected_count_reached',
    });
  });

  it('ends the event stream with the terminal status, and shows money without float noise', async () => {
    const run = await h.call('POST', '/v1/evaluation/runs', {
      body: {
        container: 'c',
        evaluators: ['j'],
        sample: { type: 'dataset', dataset: 'd' },
        ground_truth: { type: 'dataset', dataset: 'd' },
      },
    });
    const res = await fetch(`${h.url}/v1/evaluation/runs/${run.body.id}/events`, {
      headers: { authorization: `Bearer ${h.admin.key}` },
    });
    const events = [...(await res.text()).matchAll(/event: (\w+)\ndata: (.*)\n\n/g)].map((m) => m[1]);
    expect(events.at(-1)).toBe('status');
    const done = await finished(run.body.id);
    // Seven judged positions at 0.001398 USD each.
    expect(done.spend).toBe(0.009786);
    expect(done.metrics.judge.cost).toBe(0.009786);
  });
});
