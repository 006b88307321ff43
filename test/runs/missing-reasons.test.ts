import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type MockUpstream, startMockUpstream } from '../fixtures/mock-upstream.js';
import { type Harness, startHarness } from '../helpers/harness.js';
import { waitFor } from '../helpers/wait.js';

/** A missing position says why it was not scored, in the samples of the API. */
let h: Harness;
let mock: MockUpstream;

beforeAll(async () => {
  mock = await startMockUpstream({ reply: () => ({ json: { score: 1, reasoning: 'fine' } }) });
  h = await startHarness();
  const model = await h.call('POST', '/v1/models', {
    body: { label: 'judge', provider: 'openai-compatible', base_url: mock.baseUrl, upstream_model: 'judge' },
  });
  expect(model.status, model.text).toBe(201);
  expect((await h.call('POST', '/v1/containers', { body: { label: 'app' } })).status).toBe(201);
  const items = [
    { input: 'a', expected: 'x' }, // no output
    { input: 'b', output: 'out b' }, // no expected
    { input: 'c', output: 'out c', expected: 'y' }, // scored by both
    { input: 'd', output: '   ', expected: 'z' }, // a blank output
  ];
  expect((await h.call('POST', '/v1/datasets', { body: { label: 'qa', items } })).status).toBe(201);
  for (const [name, prompt] of [
    ['plain', 'Rate {{output}}'],
    ['versus', 'Compare {{output}} with {{expected}}'],
  ]) {
    const res = await h.call('POST', '/v1/evaluators', {
      body: { type: 'judge', name, model: 'judge', prompt },
    });
    expect(res.status, res.text).toBe(201);
  }
});
afterAll(async () => {
  await h?.close();
  await mock?.close();
});

async function finished(runId: string) {
  await waitFor(
    async () => {
      const r = await h.call('GET', `/v1/evaluation/runs/${runId}`);
      return ['completed', 'error', 'cancelled'].includes(r.body.status);
    },
    30_000,
    'run ended',
  );
}

describe('missing samples say why', () => {
  let runId = '';

  it('names the reason of each missing position; scored samples have none', async () => {
    const created = await h.call('POST', '/v1/evaluation/runs', {
      body: { container: 'app', evaluators: ['plain', 'versus'], sample: { type: 'dataset', dataset: 'qa' } },
    });
    expect(created.status, created.text).toBe(201);
    runId = created.body.id;
    await finished(runId);
    const evaluators = await h.call('GET', '/v1/evaluators');
    const idOf = (name: string) => evaluators.body.data.find((e: { name: string }) => e.name === name)?.id;

    const res = await h.call('GET', `/v1/evaluation/runs/${runId}/samples?limit=100`);
    expect(res.status).toBe(200);
    const got = res.body.data.map(
      (s: { evaluator_id: string; position: number; status: string; missing_reason: string | null }) => [
        s.evaluator_id === idOf('plain') ? 'plain' : 'versus',
        s.position,
        s.status,
        s.missing_reason,
      ],
    );
    got.sort((a: [string, number], b: [string, number]) => a[0].localeCompare(b[0]) || a[1] - b[1]);
    expect(got).toEqual([
      ['plain', 0, 'missing', 'the sample has no output'],
      ['plain', 1, 'scored', null],
      ['plain', 2, 'scored', null],
      ['plain', 3, 'missing', 'the sample has no output'],
      ['versus', 0, 'missing', 'the sample has no output'],
      ['versus', 1, 'missing', 'no expected value (the prompt uses {{expected}})'],
      ['versus', 2, 'scored', null],
      ['versus', 3, 'missing', 'the sample has no output'],
    ]);

    const missing = await h.call('GET', `/v1/evaluation/runs/${runId}/samples?status=missing&limit=100`);
    expect(missing.body.data).toHaveLength(5);
    expect(
      missing.body.data.every((s: { missing_reason: unknown }) => typeof s.missing_reason === 'string'),
    ).toBe(true);
  });

  it('answers 404 to another project and 422 to an unknown status', async () => {
    const other = await h.key(['*'], 'elsewhere');
    const foreign = await h.call('GET', `/v1/evaluation/runs/${runId}/samples`, { key: other.key });
    expect(foreign.status).toBe(404);
    const bad = await h.call('GET', `/v1/evaluation/runs/${runId}/samples?status=absent`);
    expect(bad.status).toBe(422);
  });
});
