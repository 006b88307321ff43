import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Harness, startHarness } from '../helpers/harness.js';
import { descendants } from '../helpers/processes.js';
import { hasBwrap } from '../helpers/sandbox.js';
import { waitFor } from '../helpers/wait.js';

let h: Harness;

beforeAll(async () => {
  // Small chunks: many chunks of one run in flight at once, which used to start a scorer each.
  h = await startHarness({ env: { EVALGATE_RUN_CHUNK_SIZE: '16', EVALGATE_WORKER_CONCURRENCY: '8' } });
  await h.call('POST', '/v1/containers', { body: { label: 'c' } });
  const items = Array.from({ length: 300 }, (_, i) => ({ input: `${i}`, output: `${i}`, expected: `${i}` }));
  await h.call('POST', '/v1/datasets', { body: { label: 'd', items } });
  await h.call('POST', '/v1/evaluators', {
    body: {
      type: 'code',
      name: 'exact',
      source:
        'def evaluate(sample, ground_truth, baseline):\n    return sample["output"] == ground_truth["expected"]\n',
    },
  });
});
afterAll(async () => {
  await h?.close();
});

describe.skipIf(!hasBwrap)('code evaluator scorers', () => {
  it('five 300-position runs leave no sandbox process behind', async () => {
    const seen: number[] = [];
    for (let i = 0; i < 5; i++) {
      const run = await h.call('POST', '/v1/evaluation/runs', {
        body: {
          container: 'c',
          evaluators: ['exact'],
          sample: { type: 'dataset', dataset: 'd', range: '0:300' },
          ground_truth: { type: 'dataset', dataset: 'd', range: '0:300' },
        },
      });
      expect(run.status, JSON.stringify(run.body)).toBe(201);
      await waitFor(async () => {
        seen.push(descendants(process.pid, 'runner.py').length);
        return (await h.call('GET', `/v1/evaluation/runs/${run.body.id}`)).body.status === 'completed';
      }, 60_000);
      const done = (await h.call('GET', `/v1/evaluation/runs/${run.body.id}`)).body;
      expect(
        done.results.per_model[0].per_eval[Object.keys(done.results.per_model[0].per_eval)[0]!],
      ).toMatchObject({
        num_scored: 300,
        num_passed: 300,
      });
    }
    // The runs did start sandboxed workers (so the count below can tell)...
    expect(Math.max(...seen)).toBeGreaterThan(0);
    // ...and closed every one once their run ended.
    await waitFor(() => descendants(process.pid, 'runner.py').length === 0, 10_000);
    expect(h.worker?.engine.scorers.size).toBe(0);
  }, 180_000);
});
