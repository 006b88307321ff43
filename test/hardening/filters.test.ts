import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type MockUpstream, startMockUpstream } from '../fixtures/mock-upstream.js';
import { type Harness, startHarness } from '../helpers/harness.js';
import { waitFor } from '../helpers/wait.js';

/**
 * Issue 15, item 8: filters and parameters are never silently ignored. Unknown values of known
 * parameters and unknown parameters of routes that take query parameters answer 422.
 */
let h: Harness;
let mock: MockUpstream;
let runId: string;

beforeAll(async () => {
  // The judge scores "good" outputs and answers unparseable text for "bad" ones (an error sample);
  // a row without output is a missing sample.
  mock = await startMockUpstream({
    reply: (req) =>
      req.lastUserText.includes('bad') ? 'not json at all' : { json: { score: 1, reasoning: 'ok' } },
  });
  h = await startHarness();
  await h.call('POST', '/v1/models', {
    body: { label: 'judge', provider: 'openai-compatible', base_url: mock.baseUrl, upstream_model: 'j' },
  });
  await h.call('POST', '/v1/containers', { body: { label: 'c' } });
  await h.call('POST', '/v1/evaluators', {
    body: { type: 'judge', name: 'j', model: 'judge', prompt: 'Rate {{output}}', pass_threshold: 0.5 },
  });
  await h.call('POST', '/v1/datasets', {
    body: {
      label: 'rows',
      items: [{ output: 'good one' }, { output: 'bad one' }, { input: 'no output' }, { output: 'good two' }],
    },
  });
  const created = await h.call('POST', '/v1/evaluation/runs', {
    body: { container: 'c', evaluators: ['j'], sample: { type: 'dataset', dataset: 'rows' } },
  });
  expect(created.status, JSON.stringify(created.body)).toBe(201);
  runId = created.body.id;
  let ended: any;
  await waitFor(
    async () => {
      ended = (await h.call('GET', `/v1/evaluation/runs/${runId}`)).body;
      return ['completed', 'error', 'cancelled'].includes(ended.status);
    },
    60_000,
    'run end',
  );
  // Error and missing samples do not fail the run: the totals below are those of a completed run.
  expect(ended.status, JSON.stringify(ended)).toBe('completed');
});
afterAll(async () => {
  await h?.close();
  await mock?.close();
});

describe('run list filters', () => {
  it('answers 422 for an unknown status instead of an empty list', async () => {
    const res = await h.call('GET', '/v1/evaluation/runs?status=bogus');
    expect(res.status).toBe(422);
    expect(res.body.detail).toEqual([expect.objectContaining({ loc: ['query', 'status'], type: 'enum' })]);
  });

  it('filters by every status of the contract', async () => {
    const status = (await h.call('GET', `/v1/evaluation/runs/${runId}`)).body.status;
    for (const s of ['queued', 'running', 'completed', 'error', 'cancelled']) {
      const res = await h.call('GET', `/v1/evaluation/runs?status=${s}`);
      expect(res.status, s).toBe(200);
      expect(res.body.total, s).toBe(s === status ? 1 : 0);
      for (const run of res.body.data) expect(run.status).toBe(s);
    }
  });
});

describe('sample filters', () => {
  it('filters by sample status', async () => {
    const all = await h.call('GET', `/v1/evaluation/runs/${runId}/samples`);
    expect(all.body.total).toBe(4);
    const counts: Record<string, number> = {};
    for (const s of ['scored', 'error', 'missing']) {
      const res = await h.call('GET', `/v1/evaluation/runs/${runId}/samples?status=${s}`);
      expect(res.status, s).toBe(200);
      for (const sample of res.body.data) expect(sample.status).toBe(s);
      counts[s] = res.body.total;
    }
    expect(counts).toEqual({ scored: 2, error: 1, missing: 1 });
    // Combined with the other filters, as a conjunction.
    const both = await h.call('GET', `/v1/evaluation/runs/${runId}/samples?status=scored&passed=true`);
    expect(both.body.total).toBe(2);
  });

  it('answers 422 for an unknown sample status', async () => {
    const res = await h.call('GET', `/v1/evaluation/runs/${runId}/samples?status=failed`);
    expect(res.status).toBe(422);
    expect(res.body.detail).toEqual([expect.objectContaining({ loc: ['query', 'status'], type: 'enum' })]);
  });
});

describe('unknown query parameters', () => {
  it('answers 422 naming each on routes that take query parameters', async () => {
    for (const path of [
      '/v1/evaluation/runs?stauts=error',
      `/v1/evaluation/runs/${runId}/samples?state=error`,
      '/v1/evaluators?containr=c',
      '/v1/containers?foo=1',
      '/v1/datasets?sort=label',
      '/v1/datasets/rows/items?rang=0:1',
      '/v1/containers/c/logs?modle=x',
      '/v1/api-keys?all=true',
    ]) {
      const res = await h.call('GET', path);
      const name = path.split('?')[1]!.split('=')[0];
      expect(res.status, path).toBe(422);
      expect(res.body.detail, path).toEqual([
        expect.objectContaining({ loc: ['query', name], type: 'extra_forbidden' }),
      ]);
    }
    const two = await h.call('GET', '/v1/evaluators?a=1&b=2&limit=5');
    expect(two.body.detail.map((d: any) => d.loc)).toEqual([
      ['query', 'a'],
      ['query', 'b'],
    ]);
  });

  it('still takes the known ones, and ignores the query string of routes that take none', async () => {
    expect((await h.call('GET', '/v1/evaluators?container=c&limit=5&offset=0')).status).toBe(200);
    expect((await h.call('GET', '/v1/evaluation/runs?container=c&status=completed')).status).toBe(200);
    expect((await h.call('GET', '/healthz?probe=lb', { key: null })).status).toBe(200);
    expect((await h.call('GET', '/v1/models?after=x')).status).toBe(200);
    expect((await h.call('GET', `/v1/evaluation/runs/${runId}?expand=all`)).status).toBe(200);
  });
});
