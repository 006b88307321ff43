import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type MockRequest, type MockUpstream, startMockUpstream } from '../fixtures/mock-upstream.js';
import { type Harness, startHarness } from '../helpers/harness.js';
import { waitFor } from '../helpers/wait.js';

// A model grader's samples carry the hash of the prompt it asked with; the samples API shows it, and
// agreement keeps two versions of the prompt apart instead of pooling them.

let h: Harness;
let mock: MockUpstream;

const ITEMS = [
  { input: 'q0', output: 'yes' },
  { input: 'q1', output: 'no' },
  { input: 'q2', output: 'yes' },
];

/** The label model answers "good" for "yes"; a prompt that says "strict" answers "bad" for everything. */
function reply(req: MockRequest) {
  const strict = JSON.stringify(req.body?.messages ?? []).includes('strict');
  const good = !strict && req.lastUserText.includes('A: yes');
  return {
    json: { label: good ? 'good' : 'bad', reasoning: 'looked' },
    promptTokens: 5,
    completionTokens: 2,
  };
}

beforeAll(async () => {
  mock = await startMockUpstream({ reply });
  h = await startHarness();
  await h.call('POST', '/v1/models', {
    body: { label: 'judge', provider: 'openai-compatible', base_url: mock.baseUrl, upstream_model: 'j' },
  });
  await h.call('POST', '/v1/containers', { body: { label: 'c' } });
  expect((await h.call('POST', '/v1/datasets', { body: { label: 'qa', items: ITEMS } })).status).toBe(201);
}, 120_000);
afterAll(async () => {
  await h?.close();
  await mock?.close();
});

async function runOnce(evaluator: string): Promise<string> {
  const run = await h.call('POST', '/v1/evaluation/runs', {
    body: {
      container: 'c',
      evaluators: [evaluator],
      sample: { type: 'dataset', dataset: 'qa', range: '0:3' },
    },
  });
  expect(run.status, run.text).toBe(201);
  await waitFor(
    async () => (await h.call('GET', `/v1/evaluation/runs/${run.body.id}`)).body.status === 'completed',
    60_000,
  );
  return run.body.id;
}

describe('the prompt hash of a model grader', () => {
  it('is on every sample, changes with the prompt, and splits agreement by prompt version', async () => {
    const ev = await h.call('POST', '/v1/evaluators', {
      body: {
        type: 'label_model',
        name: 'verdict',
        model: 'judge',
        input: [{ role: 'user', content: 'Q: {{item.input}} A: {{sample.output_text}}' }],
        labels: ['good', 'bad'],
        passing_labels: ['good'],
      },
    });
    expect(ev.status, ev.text).toBe(201);
    const first = await runOnce(ev.body.id);
    const patched = await h.call('PATCH', `/v1/evaluators/${ev.body.id}`, {
      body: {
        input: [
          { role: 'system', content: 'Be strict.' },
          { role: 'user', content: 'Q: {{item.input}} A: {{sample.output_text}}' },
        ],
      },
    });
    expect(patched.status, patched.text).toBe(200);
    const second = await runOnce(ev.body.id);

    const hashes = async (run: string) => {
      const res = await h.call('GET', `/v1/evaluation/runs/${run}/samples?limit=10`);
      expect(res.status).toBe(200);
      expect(res.body.data).toHaveLength(3);
      return new Set(res.body.data.map((s: { prompt_hash: string | null }) => s.prompt_hash));
    };
    const [a, b] = [await hashes(first), await hashes(second)];
    expect(a.size).toBe(1);
    expect(b.size).toBe(1);
    const [ha, hb] = [[...a][0] as string, [...b][0] as string];
    expect(ha).toMatch(/^[0-9a-f]{16}$/);
    expect(hb).toMatch(/^[0-9a-f]{16}$/);
    expect(hb).not.toBe(ha);

    // The same items of both runs reviewed: two groups, one per prompt, never pooled.
    const queue = await h.call('POST', '/v1/annotation-queues', {
      body: { name: 'versions', evaluators: ['verdict'] },
    });
    expect(queue.status, queue.text).toBe(201);
    const positions = [0, 1, 2];
    const added = await h.call('POST', `/v1/annotation-queues/${queue.body.id}/items`, {
      body: {
        run_samples: [
          ...positions.map((position) => ({ run: first, position })),
          ...positions.map((position) => ({ run: second, position })),
        ],
      },
    });
    expect(added.status, added.text).toBe(200);
    expect(added.body.added).toBe(6);
    const items = await h.call('GET', `/v1/annotation-queues/${queue.body.id}/items?limit=10`);
    for (const item of items.body.data) {
      const good = ITEMS[item.position]!.output === 'yes';
      const r = await h.call('POST', `/v1/annotation-queues/${queue.body.id}/items/${item.id}/review`, {
        body: { scores: [{ evaluator: 'verdict', label: good ? 'good' : 'bad' }] },
      });
      expect(r.status, r.text).toBe(201);
    }
    const agreement = await h.call('GET', `/v1/evaluators/verdict/agreement?queue=${queue.body.id}`);
    expect(agreement.status, agreement.text).toBe(200);
    const groups = agreement.body.groups as { prompt_hash: string; n: number; percent_agreement: number }[];
    expect(groups.map((g) => g.prompt_hash).sort()).toEqual([ha, hb].sort());
    const byHash = new Map(groups.map((g) => [g.prompt_hash, g]));
    // The first prompt agrees with the person on all three; the strict one on the one "no" only.
    expect(byHash.get(ha)).toMatchObject({ n: 3, percent_agreement: 1 });
    expect(byHash.get(hb)!.n).toBe(3);
    expect(byHash.get(hb)!.percent_agreement).toBeCloseTo(1 / 3, 12);
  }, 180_000);
});
