import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type MockUpstream, startMockUpstream } from '../fixtures/mock-upstream.js';
import { type Harness, startHarness } from '../helpers/harness.js';
import { waitFor } from '../helpers/wait.js';

/**
 * The ground-truth rule of task logs (the source registry's): a run over a container's task logs whose
 * ground truth is omitted resolves it to the same logs, and a task log is no reference for itself, so a
 * code evaluator gets `ground_truth=None`. The README's `exact_match.py` then counts each position as
 * missing with a reason (its own comment), never `evaluator_exception`; with a dataset as ground truth
 * it scores.
 */

let h: Harness;
let mock: MockUpstream;

/** The README's code evaluator, as the README writes it. */
function readmeExactMatch(): string {
  const readme = readFileSync(path.resolve(__dirname, '../../README.md'), 'utf8');
  const m = /cat > exact_match\.py <<'EOF'\n([\s\S]*?)\nEOF/.exec(readme);
  if (!m?.[1]) throw new Error('README.md has no exact_match.py block');
  return `${m[1]}\n`;
}

beforeAll(async () => {
  mock = await startMockUpstream({
    reply: (req) => ({ text: req.lastUserText.includes('2+2') ? '4' : '6' }),
  });
  h = await startHarness({
    env: { EVALGATE_PIP_FIND_LINKS: mkdtempSync(path.join(tmpdir(), 'evalgate-wheels-')) },
  });
  await h.call('POST', '/v1/models', {
    body: { label: 'gen', provider: 'openai-compatible', base_url: mock.baseUrl, upstream_model: 'gen' },
  });
  expect((await h.call('POST', '/v1/containers', { body: { label: 'support-bot' } })).status).toBe(201);
  for (const question of ['2+2', '3+3']) {
    const res = await fetch(`${h.url}/v1/chat/completions`, {
      method: 'POST',
      headers: {
        authorization: `Bearer ${h.admin.key}`,
        'content-type': 'application/json',
        'x-evalgate-container': 'support-bot',
      },
      body: JSON.stringify({ model: 'gen', messages: [{ role: 'user', content: question }] }),
    });
    expect(res.status).toBe(200);
    await res.text();
  }
  const ev = await h.call('POST', '/v1/evaluators', {
    body: { type: 'code', name: 'exact-match', source: readmeExactMatch() },
  });
  expect(ev.status, JSON.stringify(ev.body)).toBe(201);
  await h.call('POST', '/v1/datasets', {
    body: { label: 'answers', items: [{ expected: '4' }, { expected: '5' }] },
  });
});
afterAll(async () => {
  await h?.close();
  await mock?.close();
});

async function runToEnd(body: Record<string, unknown>) {
  const created = await h.call('POST', '/v1/evaluation/runs', {
    body: { container: 'support-bot', evaluators: ['exact-match'], ...body },
  });
  expect(created.status, JSON.stringify(created.body)).toBe(201);
  const id = created.body.id as string;
  await waitFor(
    async () =>
      ['completed', 'error', 'cancelled'].includes(
        (await h.call('GET', `/v1/evaluation/runs/${id}`)).body.status,
      ),
    60_000,
  );
  const run = (await h.call('GET', `/v1/evaluation/runs/${id}`)).body;
  const samples = (await h.call('GET', `/v1/evaluation/runs/${id}/samples?limit=10`)).body.data;
  return {
    run,
    samples,
    perEval: Object.values(run.results.per_model[0].per_eval)[0] as Record<string, unknown>,
  };
}

// Code evaluators run sandboxed Python; the database under the run does not change the rule: once is enough.
describe.skipIf(process.env.EVALGATE_TEST_DB === 'postgres')(
  'the ground truth of a run over task logs',
  () => {
    it("gives the README's exact_match.py no ground truth: each position is missing, with a reason", async () => {
      for (const body of [
        { sample: { type: 'container', container: 'support-bot' } },
        // The same logs named explicitly on both sides: the same rule.
        {
          sample: { type: 'container', container: 'support-bot', range: '0:2' },
          ground_truth: { type: 'container', container: 'support-bot', range: '0:2' },
        },
      ]) {
        const { run, samples, perEval } = await runToEnd(body);
        expect(run.status).toBe('completed');
        // The contract's rule holds: the omitted ground truth is the container's logs.
        expect(run.ground_truth).toMatchObject({ type: 'container' });
        expect(perEval).toMatchObject({ num_total: 2, num_missing: 2, num_errors: 0, num_scored: 0 });
        expect(JSON.stringify(samples)).not.toContain('evaluator_exception');
        for (const s of samples) {
          expect(s.status).toBe('missing');
          expect(JSON.stringify(s)).toContain('no ground_truth');
        }
      }
    }, 120_000);

    it('hands it the ground truth when that is another source, and it scores', async () => {
      const { run, perEval } = await runToEnd({
        sample: { type: 'container', container: 'support-bot' },
        ground_truth: { type: 'dataset', dataset: 'answers' },
      });
      expect(run.status).toBe('completed');
      // 2+2 → "4" matches "4"; 3+3 → "6" does not match "5".
      expect(perEval).toMatchObject({
        num_total: 2,
        num_scored: 2,
        num_passed: 1,
        num_failed: 1,
        num_errors: 0,
      });
    }, 120_000);
  },
);
