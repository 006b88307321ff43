import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type MockUpstream, startMockUpstream } from '../fixtures/mock-upstream.js';
import { type Harness, startHarness } from '../helpers/harness.js';
import { waitFor } from '../helpers/wait.js';

let h: Harness;
let mock: MockUpstream;
let judgeId: string;

beforeAll(async () => {
  mock = await startMockUpstream({ reply: () => ({ json: { score: 0.8, reasoning: 'fine' } }) });
  // One owner of retries: the provider layer retries transport failures (once here); the run only
  // waits out 429s. A failing judge call therefore costs exactly 1 + EVALGATE_UPSTREAM_RETRIES attempts.
  h = await startHarness({
    env: {
      EVALGATE_UPSTREAM_RETRIES: '1',
      EVALGATE_UPSTREAM_RETRY_BASE_MS: '10',
      EVALGATE_MODEL_CONCURRENCY: '4',
    },
  });
  await h.call('POST', '/v1/models', {
    body: { label: 'judge', provider: 'openai-compatible', base_url: mock.baseUrl, upstream_model: 'j' },
  });
  await h.call('POST', '/v1/containers', { body: { label: 'c' } });
  const items = Array.from({ length: 6 }, (_, i) => ({ input: `q${i}`, output: `a${i}` }));
  await h.call('POST', '/v1/datasets', { body: { label: 'six', items } });
  const ev = await h.call('POST', '/v1/evaluators', {
    body: { type: 'judge', name: 'j', model: 'judge', prompt: 'Rate {{output}}' },
  });
  judgeId = ev.body.id;
});
afterAll(async () => {
  await h?.close();
  await mock?.close();
});

const body = {
  container: 'c',
  evaluators: ['j'],
  sample: { type: 'dataset', dataset: 'six' },
  ground_truth: { type: 'dataset', dataset: 'six' },
};

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

describe('run rate control and provider errors', () => {
  it('slows down on 429 and honours Retry-After instead of failing', async () => {
    mock.reset();
    mock.fail({ status: 429, retryAfter: 1, times: 2 });
    const t0 = Date.now();
    const run = await h.call('POST', '/v1/evaluation/runs', { body });
    const done = await finished(run.body.id);
    expect(done.status).toBe('completed');
    expect(done.results.per_model[0].per_eval[judgeId]).toMatchObject({ num_scored: 6, num_errors: 0 });
    expect(Date.now() - t0).toBeGreaterThanOrEqual(1_000);
    expect(mock.stats.requests).toBe(8);
  });

  it('retries a transient upstream failure and records a permanent one on its sample', async () => {
    mock.reset();
    mock.fail({ status: 503, times: 1 });
    const transient = await finished((await h.call('POST', '/v1/evaluation/runs', { body })).body.id);
    expect(transient.results.per_model[0].per_eval[judgeId]).toMatchObject({ num_scored: 6, num_errors: 0 });
    expect(mock.stats.requests).toBe(7);

    // Two 503s in a row exhaust the one retry: that position is an error, after exactly two attempts.
    mock.reset();
    mock.fail({ status: 503, times: 2, match: (req) => req.lastUserText.includes('Rate a3') });
    const exhausted = await finished((await h.call('POST', '/v1/evaluation/runs', { body })).body.id);
    expect(exhausted.results.per_model[0].per_eval[judgeId]).toMatchObject({ num_scored: 5, num_errors: 1 });
    // Five answered positions and two attempts at the failing one.
    expect(mock.stats.requests).toBe(7);
    expect(exhausted.metrics.judge.calls).toBe(5);

    mock.reset();
    mock.fail({ status: 400, message: 'context length exceeded', times: 1 });
    const permanent = await finished((await h.call('POST', '/v1/evaluation/runs', { body })).body.id);
    expect(permanent.status).toBe('completed');
    expect(permanent.results.per_model[0].per_eval[judgeId]).toMatchObject({ num_scored: 5, num_errors: 1 });
    const errored = await h.call('GET', `/v1/evaluation/runs/${permanent.id}/samples?errored=true`);
    expect(errored.body.data[0].error.message).toMatch(/context length exceeded/);
  });

  it('streams status and progress events ending with the terminal status', async () => {
    mock.reset();
    mock.set({ latencyMs: 100 });
    const run = await h.call('POST', '/v1/evaluation/runs', { body });
    const res = await fetch(`${h.url}/v1/evaluation/runs/${run.body.id}/events`, {
      headers: { authorization: `Bearer ${h.admin.key}` },
    });
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/text\/event-stream/);
    expect(res.headers.get('x-ratelimit-limit')).not.toBeNull();
    const text = await res.text();
    const events = [...text.matchAll(/event: (\w+)\ndata: (.*)\n\n/g)].map((m) => ({
      event: m[1],
      data: JSON.parse(m[2] ?? 'null'),
    }));
    const statuses = events.filter((e) => e.event === 'status').map((e) => e.data.status);
    expect(statuses.at(-1)).toBe('completed');
    expect(statuses[0]).toMatch(/queued|running/);
    const progress = events.filter((e) => e.event === 'progress').map((e) => e.data);
    expect(progress.at(-1)).toEqual({ done: 6, total: 6 });
    mock.set({ latencyMs: 0 });
    const missing = await h.call('GET', '/v1/evaluation/runs/run_nope/events');
    expect(missing.status).toBe(404);
  });
});
