import { performance } from 'node:perf_hooks';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { agreementRuntime } from '../../src/review/agreement/service.js';
import { type MockUpstream, startMockUpstream } from '../fixtures/mock-upstream.js';
import { type Harness, startHarness } from '../helpers/harness.js';
import { waitFor } from '../helpers/wait.js';

// Agreement statistics leave the event loop free: /healthz answers at once while a large bootstrap is
// computed on a statistics thread. The answer is kept per version of the data (same inputs: no new
// computation; a new review: a new one), identical requests in flight share one computation, and
// resamples are bounded (422).

const N = 400;
const judgeScore = (i: number) => (i % 5) + 1;
/** The expected grade: the judge's, except at every third position, where it is one off. */
const expectedScore = (i: number) => (i % 3 === 0 ? ((judgeScore(i) + 1) % 5) + 1 : judgeScore(i));

let h: Harness;
let mock: MockUpstream;
let runId: string;

beforeAll(async () => {
  mock = await startMockUpstream({
    reply: (req) => {
      const messages = (req.body?.messages ?? []) as { content: string }[];
      const m = /\ba(\d+)\b/.exec(String(messages.at(-1)?.content ?? ''));
      const i = Number(m?.[1] ?? 0);
      return { json: { score: judgeScore(i), reasoning: `graded a${i}` } };
    },
  });
  h = await startHarness();
  const model = await h.call('POST', '/v1/models', {
    body: {
      label: 'judge-model',
      provider: 'openai-compatible',
      base_url: mock.baseUrl,
      upstream_model: 'j',
    },
  });
  expect(model.status, model.text).toBe(201);
  await h.call('POST', '/v1/containers', { body: { label: 'c' } });
  const items = Array.from({ length: N }, (_, i) => ({
    input: `q${i}`,
    output: ` a${i}`,
    expected: expectedScore(i),
  }));
  expect((await h.call('POST', '/v1/datasets', { body: { label: 'graded', items } })).status).toBe(201);
  const judge = await h.call('POST', '/v1/evaluators', {
    body: {
      type: 'judge',
      name: 'grade',
      model: 'judge-model',
      prompt: 'Grade the answer from 1 to 5.\n\nOutput:\n{{output}}',
      pass_threshold: 2,
      scale: { type: 'ordinal', min: 1, max: 5 },
    },
  });
  expect(judge.status, judge.text).toBe(201);
  const run = await h.call('POST', '/v1/evaluation/runs', {
    body: {
      container: 'c',
      evaluators: ['grade'],
      sample: { type: 'dataset', dataset: 'graded', range: `0:${N}` },
    },
  });
  expect(run.status, run.text).toBe(201);
  runId = run.body.id;
  await waitFor(
    async () => (await h.call('GET', `/v1/evaluation/runs/${runId}`)).body.status === 'completed',
    120_000,
  );
}, 300_000);

afterAll(async () => {
  vi.restoreAllMocks();
  await h?.close();
  await mock?.close();
});

describe('agreement off the event loop', () => {
  // A retried attempt asks with another seed: the first attempt's result is cached, and computed once is
  // what this test checks.
  let attempt = 0;
  it('answers /healthz within 200 ms while 10,000 resamples over 400 pairs are computed', async () => {
    const seed = 11 + 100 * attempt++;
    const computations = vi.spyOn(agreementRuntime().threads, 'run');
    computations.mockClear();
    const t0 = performance.now();
    let done = false;
    const pending = h
      .call('GET', `/v1/evaluators/grade/agreement?run=${runId}&resamples=10000&seed=${seed}`)
      .finally(() => {
        done = true;
      });
    const probes: number[] = [];
    while (!done) {
      const start = performance.now();
      const health = await fetch(`${h.url}/healthz`);
      await health.arrayBuffer();
      // A probe that outlasted the computation counts too: it is the one a blocked event loop holds up.
      probes.push(performance.now() - start);
      await new Promise((r) => setTimeout(r, 50));
    }
    const res = await pending;
    const took = performance.now() - t0;
    expect(res.status, res.text).toBe(200);
    expect(res.body.n).toBe(N);
    expect(res.body.bootstrap).toEqual({ seed, resamples: 10_000 });
    const g = res.body.groups[0];
    expect(g.percent_agreement).toBeCloseTo(2 / 3, 2);
    expect(g.intervals.kappa[0]).toBeLessThan(g.kappa);
    expect(g.intervals.kappa[1]).toBeGreaterThan(g.kappa);
    expect(computations).toHaveBeenCalledTimes(1);
    // The computation lasted long enough to be probed several times, and no probe waited on it.
    expect(took).toBeGreaterThan(500);
    expect(probes.length).toBeGreaterThanOrEqual(3);
    expect(Math.max(...probes), JSON.stringify(probes.map(Math.round))).toBeLessThan(200);
  });

  it('computes identical requests in flight once, and answers them again from the cache', async () => {
    const computations = vi.spyOn(agreementRuntime().threads, 'run');
    computations.mockClear();
    const path = `/v1/evaluators/grade/agreement?run=${runId}&resamples=2000&seed=12`;
    const answers = await Promise.all([h.call('GET', path), h.call('GET', path), h.call('GET', path)]);
    for (const a of answers) expect(a.status, a.text).toBe(200);
    expect(answers[1]!.body).toEqual(answers[0]!.body);
    expect(answers[2]!.body).toEqual(answers[0]!.body);
    expect(computations).toHaveBeenCalledTimes(1);
    const again = await h.call('GET', path);
    expect(again.body).toEqual(answers[0]!.body);
    expect(computations).toHaveBeenCalledTimes(1);
    // Another seed is another answer.
    await h.call('GET', `/v1/evaluators/grade/agreement?run=${runId}&resamples=2000&seed=13`);
    expect(computations).toHaveBeenCalledTimes(2);
  });

  it('computes again once a new review is stored', async () => {
    const computations = vi.spyOn(agreementRuntime().threads, 'run');
    const created = await h.call('POST', '/v1/annotation-queues', {
      body: { name: 'few', evaluators: ['grade'] },
    });
    expect(created.status, created.text).toBe(201);
    const queue = created.body.id;
    const added = await h.call('POST', `/v1/annotation-queues/${queue}/items`, {
      body: { rules: [{ run: runId, share: 0.05, seed: 1 }] },
    });
    expect(added.status, added.text).toBe(200);
    expect(added.body.added).toBeGreaterThanOrEqual(2);
    const review = async () => {
      const claim = await h.call('POST', `/v1/annotation-queues/${queue}/claim`);
      expect(claim.status, claim.text).toBe(200);
      const item = claim.body.item.item;
      const res = await h.call('POST', `/v1/annotation-queues/${queue}/items/${item.id}/review`, {
        body: { scores: [{ evaluator: 'grade', score: judgeScore(item.position) }] },
      });
      expect(res.status, res.text).toBe(201);
    };
    const path = `/v1/evaluators/grade/agreement?queue=few&resamples=100`;
    await review();
    computations.mockClear();
    const one = await h.call('GET', path);
    expect(one.body.n).toBe(1);
    expect((await h.call('GET', path)).body).toEqual(one.body);
    expect(computations).toHaveBeenCalledTimes(1);
    await review();
    const two = await h.call('GET', path);
    expect(two.body.n).toBe(2);
    expect(computations).toHaveBeenCalledTimes(2);
  });

  it('refuses more than 10,000 resamples with a validation error, and keeps the default', async () => {
    const over = await h.call('GET', `/v1/evaluators/grade/agreement?run=${runId}&resamples=10001`);
    expect(over.status).toBe(422);
    expect(over.body.detail[0].loc).toEqual(['query', 'resamples']);
    const plain = await h.call('GET', `/v1/evaluators/grade/agreement?run=${runId}`);
    expect(plain.status, plain.text).toBe(200);
    expect(plain.body.bootstrap).toEqual({ seed: 0, resamples: 1000 });
  });
});
