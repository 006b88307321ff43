import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type MockRequest, type MockUpstream, startMockUpstream } from '../fixtures/mock-upstream.js';
import { type Harness, startHarness } from '../helpers/harness.js';
import { waitFor } from '../helpers/wait.js';

// Prices of the judge model: every mock call uses 12 prompt and 7 completion tokens.
const CALL_COST = (12 * 1 + 7 * 2) / 1_000_000;

let h: Harness;
let mock: MockUpstream;
const attempts = new Map<string, number>();

const between = (text: string, tag: string) => new RegExp(`${tag}<<([\\s\\S]*?)>>`).exec(text)?.[1] ?? '';

/**
 * The scripted provider. Generators answer `<model>:<question>`. The pointwise judge scores 1 when OUT
 * equals EXP (or, without EXP, when OUT mentions "good"), answers garbage for outputs starting with
 * "garbage", and answers garbage only on the first attempt for "flaky". The pairwise judge prefers the
 * longer response and, on equal lengths, always the one shown first (a position bias).
 */
function reply(req: MockRequest) {
  const model: string = req.body.model;
  const text = req.lastUserText;
  if (model !== 'judge-model') return `${model}:${text}`;
  const system = String(req.body.messages[0]?.content ?? '');
  if (system.includes('comparing two responses')) {
    const a = between(text, 'A');
    const b = between(text, 'B');
    return { json: { winner: b.length > a.length ? 'B' : 'A', reasoning: 'by length' } };
  }
  const out = between(text, 'OUT');
  const seen = (attempts.get(out) ?? 0) + 1;
  attempts.set(out, seen);
  if (out.startsWith('garbage')) return 'I refuse to answer in JSON.';
  if (out.startsWith('flaky') && seen === 1) return 'score: maybe';
  const expected = text.includes('EXP<<') ? between(text, 'EXP') : null;
  const score = expected === null ? (out.includes('good') ? 1 : 0) : out === expected ? 1 : 0;
  return { json: { score, reasoning: 'scripted' } };
}

async function run(body: Record<string, unknown>) {
  const created = await h.call('POST', '/v1/evaluation/runs', { body });
  expect(created.status, JSON.stringify(created.body)).toBe(201);
  await waitFor(async () => {
    const r = await h.call('GET', `/v1/evaluation/runs/${created.body.id}`);
    return ['completed', 'error', 'cancelled'].includes(r.body.status);
  }, 20_000);
  const done = await h.call('GET', `/v1/evaluation/runs/${created.body.id}`);
  expect(done.body.status, JSON.stringify(done.body.error)).toBe('completed');
  return done.body;
}

async function dataset(label: string, items: unknown[]) {
  const res = await h.call('POST', '/v1/datasets', { body: { label, items } });
  expect(res.status).toBe(201);
}

async function judge(name: string, prompt: string, extra: Record<string, unknown> = {}) {
  const res = await h.call('POST', '/v1/evaluators', {
    body: { type: 'judge', name, model: 'judge', prompt, pass_threshold: 0.5, ...extra },
  });
  expect(res.status, JSON.stringify(res.body)).toBe(201);
  return res.body.id as string;
}

beforeAll(async () => {
  mock = await startMockUpstream({ reply });
  h = await startHarness();
  const register = (label: string, upstream: string, prices = {}) =>
    h.call('POST', '/v1/models', {
      body: {
        label,
        provider: 'openai-compatible',
        base_url: mock.baseUrl,
        upstream_model: upstream,
        ...prices,
      },
    });
  expect(
    (await register('judge', 'judge-model', { input_price_per_mtok: 1, output_price_per_mtok: 2 })).status,
  ).toBe(201);
  for (const m of ['gen-a', 'gen-b', 'gen-c']) expect((await register(m, m)).status).toBe(201);
  await h.call('POST', '/v1/containers', { body: { label: 'support' } });
});
afterAll(async () => {
  await h?.close();
  await mock?.close();
});

describe('evaluation runs end to end', () => {
  it('(a) judges task logs recorded through the gateway; ground_truth resolves to those logs', async () => {
    for (const q of ['good answer please', 'bad one', 'another good one']) {
      const res = await fetch(`${h.url}/v1/chat/completions`, {
        method: 'POST',
        headers: {
          authorization: `Bearer ${h.admin.key}`,
          'content-type': 'application/json',
          'x-evalgate-container': 'support',
        },
        body: JSON.stringify({ model: 'gen-a', messages: [{ role: 'user', content: q }] }),
      });
      expect(res.status).toBe(200);
    }
    await waitFor(async () => (await h.call('GET', '/v1/containers/support/logs')).body.total === 3);
    const id = await judge('logs-quality', 'Is this good? OUT<<{{output}}>>');
    const r = await run({
      container: 'support',
      evaluators: [id],
      sample: { type: 'container', container: 'support' },
    });
    expect(r.ground_truth.type).toBe('container');
    const e = r.results.per_model[0].per_eval[id];
    // Outputs are "gen-a:<question>": two mention "good".
    expect(e).toMatchObject({
      num_total: 3,
      num_scored: 3,
      num_passed: 2,
      num_failed: 1,
      num_errors: 0,
      num_missing: 0,
    });
    expect(e.avg_score).toBeCloseTo(2 / 3);
    expect(e.accuracy).toBeCloseTo(2 / 3);
    expect(e.break_reason).toBe('source_exhausted'); // 3 logs of the default 0:100
    expect(r.spend).toBeCloseTo(3 * CALL_COST, 12);
  });

  it('(b) scores a dataset against expected values, counting a missing output', async () => {
    await dataset('qa', [
      { input: 'q1', output: 'paris', expected: 'paris' },
      { input: 'q2', output: 'rome', expected: 'rome' },
      { input: 'q3', output: 'oslo', expected: 'lima' },
      { input: 'q4', output: 'bern', expected: 'bern' },
      { input: 'q5', output: null, expected: 'kyiv' },
    ]);
    const id = await judge('exact', 'Compare OUT<<{{output}}>> with EXP<<{{expected}}>>');
    const src = { type: 'dataset', dataset: 'qa' };
    const r = await run({ container: 'support', evaluators: [id], sample: src, ground_truth: src });
    const e = r.results.per_model[0].per_eval[id];
    expect(e).toMatchObject({
      num_total: 5,
      num_scored: 4,
      num_passed: 3,
      num_failed: 1,
      num_missing: 1,
      num_errors: 0,
    });
    expect(e.accuracy).toBeCloseTo(0.75);
    expect(e.avg_score).toBeCloseTo(0.75);
    expect(e.expected_count).toBe(100);
    expect(r.results.overall.avg_score).toBeCloseTo(0.75);
    expect(r.results.launch_count).toBe(1);
    expect(r.spend).toBeCloseTo(4 * CALL_COST, 12);
    expect(r.metrics.progress).toEqual({ done: 5, total: 5 });
    expect(r.finished_at).not.toBeNull();
    const samples = await h.call('GET', `/v1/evaluation/runs/${r.id}/samples?passed=false`);
    expect(samples.body.total).toBe(1);
    expect(samples.body.data[0]).toMatchObject({
      position: 2,
      output: 'oslo',
      expected: 'lima',
      score: 0,
      passed: false,
    });
  });

  it('(c) generates with three models, one launch each, reusing one generation per position', async () => {
    await dataset('capitals', [
      { input: 'x', expected: 'gen-b:x' },
      { input: 'y', expected: 'gen-b:y' },
    ]);
    const id = await judge('matches-b', 'OUT<<{{output}}>> EXP<<{{expected}}>>');
    const r = await run({
      container: 'support',
      evaluators: [id],
      sample: { type: 'generate', models: ['gen-a', 'gen-b', 'gen-c'] },
      ground_truth: { type: 'dataset', dataset: 'capitals' },
    });
    const perModel = r.results.per_model;
    expect(perModel.map((m: any) => m.launch_index)).toEqual([0, 1, 2]);
    expect(perModel.map((m: any) => m.model.slug)).toEqual(['gen-a', 'gen-b', 'gen-c']);
    expect(perModel.map((m: any) => m.avg_score)).toEqual([0, 1, 0]);
    for (const m of perModel) {
      expect(m.launch_call_id).toMatch(/^job_/);
      expect(m.per_eval[id]).toMatchObject({ num_total: 2, num_scored: 2 });
    }
    expect(r.results.overall.avg_score).toBeCloseTo(1 / 3);
    expect(r.metrics.generation.calls).toBe(6);
    const s = await h.call('GET', `/v1/evaluation/runs/${r.id}/samples?launch=1`);
    expect(s.body.data.map((d: any) => d.output)).toEqual(['gen-b:x', 'gen-b:y']);
  });

  it('(d) judges pairwise in both orders so that a first-position bias cancels', async () => {
    await dataset('pair-sample', [{ output: 'much longer answer' }, { output: 'same' }, { output: 'tiny' }]);
    await dataset('pair-base', [{ output: 'short' }, { output: 'same' }, { output: 'much longer baseline' }]);
    const id = await judge('versus', 'Which is better? A<<{{output_a}}>> B<<{{output_b}}>>', {
      mode: 'pairwise',
    });
    const r = await run({
      container: 'support',
      evaluators: [id],
      sample: { type: 'dataset', dataset: 'pair-sample' },
      ground_truth: { type: 'dataset', dataset: 'pair-sample' },
      baseline: { type: 'dataset', dataset: 'pair-base' },
    });
    const e = r.results.per_model[0].per_eval[id];
    // Wins both orders (1), a tie the biased judge gives to whoever is first (0.5, inconsistent), loses both (0).
    expect(e).toMatchObject({ num_scored: 3, num_inconsistent: 1, num_passed: 2, num_failed: 1 });
    expect(e.avg_score).toBeCloseTo(0.5);
    const s = await h.call('GET', `/v1/evaluation/runs/${r.id}/samples`);
    expect(s.body.data.map((d: any) => d.score)).toEqual([1, 0.5, 0]);
    expect(s.body.data[1].extra.verdicts).toEqual(['A', 'A']);
    expect(r.metrics.judge.calls).toBe(6);
  });

  it('(e) stops at the end of the data when the range reaches beyond it', async () => {
    await dataset(
      'short',
      [1, 2, 3, 4, 5].map((i) => ({ input: `q${i}`, output: `a${i}`, expected: `a${i}` })),
    );
    const id = await judge('exact-short', 'OUT<<{{output}}>> EXP<<{{expected}}>>');
    const src = { type: 'dataset', dataset: 'short', range: '3:10' };
    const r = await run({ container: 'support', evaluators: [id], sample: src, ground_truth: src });
    const e = r.results.per_model[0].per_eval[id];
    expect(e).toMatchObject({
      num_total: 2,
      num_scored: 2,
      num_passed: 2,
      expected_count: 7,
      break_reason: 'source_exhausted',
    });
    const s = await h.call('GET', `/v1/evaluation/runs/${r.id}/samples`);
    expect(s.body.data.map((d: any) => d.output)).toEqual(['a4', 'a5']);
    const exact = await run({
      container: 'support',
      evaluators: [id],
      sample: { ...src, range: '1:3' },
      ground_truth: { ...src, range: '1:3' },
    });
    expect(exact.results.per_model[0].per_eval[id]).toMatchObject({
      num_total: 2,
      break_reason: 'expected_count_reached',
    });
  });

  it('(f) counts unparseable judge replies as errors after one retry, never as scores', async () => {
    await dataset('noisy', [
      { output: 'good', expected: 'good' },
      { output: 'garbage-1', expected: 'x' },
      { output: 'flaky-1', expected: 'flaky-1' },
      { output: 'garbage-2', expected: 'y' },
      { output: 'bad', expected: 'good' },
    ]);
    const id = await judge('noisy-judge', 'OUT<<{{output}}>> EXP<<{{expected}}>>');
    const src = { type: 'dataset', dataset: 'noisy' };
    const r = await run({ container: 'support', evaluators: [id], sample: src, ground_truth: src });
    const e = r.results.per_model[0].per_eval[id];
    // good → 1, flaky retried → 1, bad → 0; the two garbage positions are errors.
    expect(e).toMatchObject({ num_total: 5, num_scored: 3, num_errors: 2, num_passed: 2, num_failed: 1 });
    expect(e.avg_score).toBeCloseTo(2 / 3);
    // 1 + 2 (flaky) + 1 + 2 × 2 (garbage) judge calls.
    expect(r.metrics.judge.calls).toBe(8);
    const errors = await h.call('GET', `/v1/evaluation/runs/${r.id}/samples?errored=true`);
    expect(errors.body.data.map((d: any) => d.error.code)).toEqual([
      'judge_unparseable',
      'judge_unparseable',
    ]);
    expect(errors.body.data.every((d: any) => d.score === null)).toBe(true);
  });
});
