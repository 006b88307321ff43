import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { pairedInterval, studentTCdf, studentTQuantile } from '../../src/runs/statistics.js';
import { type MockRequest, type MockUpstream, startMockUpstream } from '../fixtures/mock-upstream.js';
import { type Harness, startHarness } from '../helpers/harness.js';
import { waitFor } from '../helpers/wait.js';

describe('Student t quantile', () => {
  it('matches the printed table at 0.975', () => {
    const table: [number, number][] = [
      [1, 12.706],
      [2, 4.303],
      [5, 2.571],
      [10, 2.228],
      [30, 2.042],
      [1000, 1.962],
    ];
    for (const [df, t] of table)
      expect(Math.abs(studentTQuantile(0.975, df) - t), `df=${df}`).toBeLessThan(5e-4);
  });

  it('matches the exact values to 1e-9 and inverts the distribution function', () => {
    // Reference values computed with scipy.stats.t.ppf.
    const exact: [number, number, number][] = [
      [0.975, 1, 12.706204736174694],
      [0.975, 2, 4.302652729749462],
      [0.975, 4, 2.7764451051977934],
      [0.975, 5, 2.5705818356363146],
      [0.975, 10, 2.228138851986274],
      [0.975, 30, 2.0422724563012378],
      [0.975, 1000, 1.9623390808264083],
    ];
    for (const [p, df, t] of exact) expect(studentTQuantile(p, df)).toBeCloseTo(t, 9);
    for (const df of [1, 3, 7.5, 40, 250]) {
      for (const p of [0.001, 0.2, 0.5, 0.8, 0.95, 0.999]) {
        expect(studentTCdf(studentTQuantile(p, df), df)).toBeCloseTo(p, 12);
      }
      expect(studentTQuantile(0.025, df)).toBeCloseTo(-studentTQuantile(0.975, df), 12);
    }
    expect(() => studentTQuantile(1, 3)).toThrow(RangeError);
    expect(() => studentTQuantile(0.5, 0)).toThrow(RangeError);
  });

  it('gives no interval below two pairs and a point interval without spread', () => {
    expect(pairedInterval(0, 0, 0)).toEqual({ mean: null, stdev: null, interval: null });
    expect(pairedInterval(1, 0.25, 0.0625)).toEqual({ mean: 0.25, stdev: null, interval: null });
    const flat = pairedInterval(4, 0.4, 0.04);
    expect(flat.stdev).toBeCloseTo(0, 9);
    expect(flat.interval?.lower).toBeCloseTo(0.1, 9);
    expect(flat.interval?.upper).toBeCloseTo(0.1, 9);
  });
});

let h: Harness;
let mock: MockUpstream;
let release: () => void = () => {};
const gate = new Promise<void>((resolve) => {
  release = resolve;
});

const between = (text: string, tag: string) => new RegExp(`${tag}<<([\\s\\S]*?)>>`).exec(text)?.[1] ?? '';
const MODEL_SCORES: Record<string, number> = { 'gen-a': 0.3, 'gen-b': 0.8, 'gen-c': 0.5 };

/**
 * Generators answer `<model>:<question>`. The judge scores the number after `s:` in the output, or the
 * generating model's score from MODEL_SCORES; an output containing "hold" waits for `release()`.
 */
async function reply(req: MockRequest) {
  const model: string = req.body.model;
  const text = req.lastUserText;
  if (model !== 'judge-model') return `${model}:${text}`;
  const out = between(text, 'OUT');
  if (out.includes('hold')) await gate;
  const given = /s:([0-9.]+)/.exec(out)?.[1];
  const score = given !== undefined ? Number(given) : (MODEL_SCORES[out.split(':')[0] ?? ''] ?? 0);
  return { json: { score, reasoning: `judged ${out}` } };
}

async function start(body: Record<string, unknown>, key?: string) {
  const created = await h.call('POST', '/v1/evaluation/runs', { body: { container: 'cmp', ...body }, key });
  expect(created.status, JSON.stringify(created.body)).toBe(201);
  return created.body.id as string;
}

async function finished(id: string, key?: string) {
  await waitFor(async () => {
    const r = await h.call('GET', `/v1/evaluation/runs/${id}`, { key });
    return ['completed', 'error', 'cancelled'].includes(r.body.status);
  }, 20_000);
  const done = await h.call('GET', `/v1/evaluation/runs/${id}`, { key });
  expect(done.body.status, JSON.stringify(done.body.error)).toBe('completed');
  return id;
}

const run = async (body: Record<string, unknown>) => finished(await start(body));
const onDataset = (dataset: string, range?: string) => {
  const src = { type: 'dataset', dataset, ...(range ? { range } : {}) };
  return { sample: src, ground_truth: src };
};

async function dataset(label: string, items: unknown[], key?: string) {
  const res = await h.call('POST', '/v1/datasets', { body: { label, items }, key });
  expect(res.status, JSON.stringify(res.body)).toBe(201);
}

async function judge(name: string, key?: string) {
  const res = await h.call('POST', '/v1/evaluators', {
    body: { type: 'judge', name, model: 'judge', prompt: 'Rate OUT<<{{output}}>>', pass_threshold: 0.5 },
    key,
  });
  expect(res.status, JSON.stringify(res.body)).toBe(201);
  return res.body.id as string;
}

const compare = (runId: string, query: string, key?: string | null) =>
  h.call('GET', `/v1/evaluation/runs/${runId}/compare?${query}`, { key });

async function setUpProject(key?: string) {
  const register = (label: string, upstream: string) =>
    h.call('POST', '/v1/models', {
      body: { label, provider: 'openai-compatible', base_url: mock.baseUrl, upstream_model: upstream },
      key,
    });
  for (const [label, upstream] of [
    ['judge', 'judge-model'],
    ['gen-a', 'gen-a'],
    ['gen-b', 'gen-b'],
    ['gen-c', 'gen-c'],
  ] as const) {
    expect((await register(label, upstream)).status).toBe(201);
  }
  expect((await h.call('POST', '/v1/containers', { body: { label: 'cmp' }, key })).status).toBe(201);
}

let quality: string;
let positional: string;
let runOnly: string;
let baseOnly: string;
let byIdBase: string;
let byIdRun: string;
let byPosBase: string;

beforeAll(async () => {
  mock = await startMockUpstream({ reply });
  // One position per chunk, so that a held position does not keep the others of its chunk from being stored.
  h = await startHarness({ env: { EVALGATE_RUN_CHUNK_SIZE: '1' } });
  await setUpProject();
  quality = await judge('quality');
  positional = await judge('positional');
  runOnly = await judge('run-only');
  baseOnly = await judge('base-only');

  // The same items (ids a..e) in another order; x only in the baseline, y and z only in the run.
  await dataset('by-id-base', [
    { id: 'a', input: 'qa', output: 's:0.9' },
    { id: 'b', input: 'qb', output: 's:0.4' },
    { id: 'c', input: 'qc', output: 's:0.5' },
    { id: 'd', input: 'qd', output: 's:0.2' },
    { id: 'e', input: 'qe', output: 's:0.8' },
    { id: 'x', input: 'qx', output: 's:0.3' },
  ]);
  await dataset('by-id-run', [
    { id: 'e', input: 'qe', output: 's:0.6' },
    { id: 'd', input: 'qd', output: 's:0.7' },
    { id: 'c', input: 'qc', output: 's:0.5' },
    { id: 'b', input: 'qb', output: 's:0.6' },
    { id: 'a', input: 'qa', output: 's:0.3' },
    { id: 'y', input: 'qy', output: 's:1' },
    { id: 'z', input: 'qz', output: null },
  ]);
  // Rows without ids: their item ids name their datasets, so the two share none and positions match.
  await dataset('pos-base', [{ output: 's:0.2' }, { output: 's:0.4' }, { output: 's:0.6' }]);
  await dataset('pos-run', [
    { output: 's:0.4' },
    { output: 's:0.4' },
    { output: 's:0.3' },
    { output: 's:0.9' },
  ]);
  await dataset('empty-outputs', [{ output: null }, { output: null }]);
  await dataset('questions', [{ input: 'q1' }, { input: 'q2' }]);

  byIdBase = await run({ evaluators: [quality], ...onDataset('by-id-base') });
  byIdRun = await run({ evaluators: [quality], ...onDataset('by-id-run') });
  byPosBase = await run({ evaluators: [positional, baseOnly], ...onDataset('pos-base') });
});
afterAll(async () => {
  release();
  await h?.close();
  await mock?.close();
});

describe('GET /v1/evaluation/runs/{run_id}/compare', () => {
  it('matches positions by item id across orders and reports the paired statistics', async () => {
    const res = await compare(byIdRun, `baseline=${byIdBase}`);
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    const body = res.body;
    expect(body).toMatchObject({
      object: 'evaluation.run_comparison',
      run_id: byIdRun,
      baseline_id: byIdBase,
      run_status: 'completed',
      baseline_status: 'completed',
      partial: false,
      unmatched_evaluators: { run: [], baseline: [] },
      unmatched_launches: { run: [], baseline: [] },
    });
    expect(body.comparisons).toHaveLength(1);
    const c = body.comparisons[0];
    expect(c).toMatchObject({
      evaluator: { id: quality, name: 'quality' },
      launch: { index: 0, model: null },
      baseline_launch: { index: 0, model: null },
      matched_by: 'item_id',
      matched: 5,
      // Run: y (scored, no counterpart) and z (no output: missing); baseline: x.
      unmatched: { run: 2, baseline: 1 },
      wins: 2, // b +0.2, d +0.5
      ties: 1, // c 0
      losses: 2, // a −0.6, e −0.2
      verdict: 'inconclusive',
    });
    // d = run − baseline by item: a −0.6, b +0.2, c 0, d +0.5, e −0.2.
    // mean = −0.1 / 5 = −0.02; Σd² = 0.36 + 0.04 + 0 + 0.25 + 0.04 = 0.69;
    // s² = (0.69 − 5 · 0.02²) / 4 = 0.172, s = 0.41472882706655;
    // half width = t(0.975, 4) · s / √5 = 2.7764451051978 · 0.18547236990991 = 0.51495385358582.
    expect(c.mean_difference).toBeCloseTo(-0.02, 9);
    expect(c.stdev).toBeCloseTo(0.41472882706655, 9);
    expect(c.confidence_interval.level).toBe(0.95);
    expect(c.confidence_interval.lower).toBeCloseTo(-0.53495385358582, 6);
    expect(c.confidence_interval.upper).toBeCloseTo(0.49495385358582, 6);
    // pass_threshold 0.5 over a..e: baseline passes a (0.9), c (0.5), e (0.8) = 3/5; the run passes
    // b (0.6), c (0.5), d (0.7), e (0.6) = 4/5.
    expect(c.pass_rate.positions).toBe(5);
    expect(c.pass_rate.baseline).toBeCloseTo(0.6, 12);
    expect(c.pass_rate.run).toBeCloseTo(0.8, 12);
    expect(c.pass_rate.change).toBeCloseTo(0.2, 12);
    // The largest drop first: a (0.9 → 0.3, run position 4, baseline position 0), then e.
    expect(c.regressions.map((r: any) => r.item_id)).toEqual(['a', 'e']);
    const [a, e] = c.regressions;
    expect(a).toMatchObject({
      item_id: 'a',
      input: 'qa',
      run: { position: 4, output: 's:0.3', score: 0.3, reasoning: 'judged s:0.3' },
      baseline: { position: 0, output: 's:0.9', score: 0.9, reasoning: 'judged s:0.9' },
    });
    expect(a.difference).toBeCloseTo(-0.6, 12);
    expect(e).toMatchObject({ run: { position: 0, score: 0.6 }, baseline: { position: 4, score: 0.8 } });
    expect(e.difference).toBeCloseTo(-0.2, 12);
    expect(body.summary).toMatchObject({
      comparisons: 1,
      matched: 5,
      wins: 2,
      ties: 1,
      losses: 2,
      better: 0,
      worse: 0,
      inconclusive: 1,
      // Both meanings of better/worse, named: comparisons by their interval, positions by their scores.
      comparisons_better: 0,
      comparisons_worse: 0,
      positions_better: 2,
      positions_worse: 2,
    });
    expect(body.summary.mean_difference).toBeCloseTo(-0.02, 9);
    expect(body.summary.pass_rate_change).toBeCloseTo(0.2, 12);

    const one = await compare(byIdRun, `baseline=${byIdBase}&limit=1`);
    expect(one.body.comparisons[0].regressions.map((r: any) => r.item_id)).toEqual(['a']);

    // The other way round, every difference changes sign.
    const back = (await compare(byIdBase, `baseline=${byIdRun}`)).body.comparisons[0];
    expect(back).toMatchObject({
      matched: 5,
      wins: 2,
      ties: 1,
      losses: 2,
      unmatched: { run: 1, baseline: 2 },
    });
    expect(back.mean_difference).toBeCloseTo(0.02, 9);
    expect(back.confidence_interval.lower).toBeCloseTo(-0.49495385358582, 6);
    expect(back.pass_rate.change).toBeCloseTo(-0.2, 12);
    expect(back.regressions.map((r: any) => r.item_id)).toEqual(['d', 'b']);
  });

  it('falls back to positions when the runs share no item id, and lists evaluators in one run only', async () => {
    const runId = await run({ evaluators: [positional, runOnly], ...onDataset('pos-run') });
    const res = await compare(runId, `baseline=${byPosBase}`);
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    expect(res.body.unmatched_evaluators).toEqual({
      run: [{ id: runOnly, name: 'run-only' }],
      baseline: [{ id: baseOnly, name: 'base-only' }],
    });
    expect(res.body.comparisons).toHaveLength(1);
    const c = res.body.comparisons[0];
    // d by position: 0.4 − 0.2 = +0.2, 0.4 − 0.4 = 0, 0.3 − 0.6 = −0.3; the run's position 3 has no counterpart.
    expect(c).toMatchObject({
      evaluator: { id: positional },
      matched_by: 'position',
      matched: 3,
      unmatched: { run: 1, baseline: 0 },
      wins: 1,
      ties: 1,
      losses: 1,
    });
    // mean = −0.1 / 3; Σd² = 0.13; s² = (0.13 − 3 · (0.1/3)²) / 2 = 0.0633333…, s = 0.25166114784236;
    // half width = t(0.975, 2) · s / √3 = 4.3026527297495 · 0.14529663145135 = 0.62516094793758.
    expect(c.mean_difference).toBeCloseTo(-0.0333333333333, 9);
    expect(c.stdev).toBeCloseTo(0.25166114784236, 9);
    expect(c.confidence_interval.lower).toBeCloseTo(-0.65849428127091, 6);
    expect(c.confidence_interval.upper).toBeCloseTo(0.59182761460424, 6);
    // Baseline passes 0.6 only (1/3); the run passes none of its first three (0).
    expect(c.pass_rate.baseline).toBeCloseTo(1 / 3, 12);
    expect(c.pass_rate.run).toBe(0);
    expect(c.pass_rate.change).toBeCloseTo(-1 / 3, 12);
    expect(c.regressions).toHaveLength(1);
    expect(c.regressions[0]).toMatchObject({
      item_id: expect.any(String),
      run: { position: 2, score: 0.3 },
      baseline: { position: 2, score: 0.6 },
    });

    // One matched position: a mean, but no spread and no interval.
    const single = await run({ evaluators: [positional], ...onDataset('pos-run', '0:1') });
    const s = (await compare(single, `baseline=${byPosBase}`)).body.comparisons[0];
    expect(s).toMatchObject({ matched: 1, stdev: null, confidence_interval: null, verdict: 'inconclusive' });
    expect(s.mean_difference).toBeCloseTo(0.2, 12);
    expect(s.unmatched).toEqual({ run: 0, baseline: 2 });
  });

  it('matches launches by model, and two single-launch runs with each other', async () => {
    const ground_truth = { type: 'dataset', dataset: 'questions' };
    const ab = await run({
      evaluators: [quality],
      sample: { type: 'generate', models: ['gen-a', 'gen-b'] },
      ground_truth,
    });
    const bc = await run({
      evaluators: [quality],
      sample: { type: 'generate', models: ['gen-b', 'gen-c'] },
      ground_truth,
    });
    const res = await compare(ab, `baseline=${bc}`);
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    expect(res.body.comparisons).toHaveLength(1);
    expect(res.body.comparisons[0]).toMatchObject({
      launch: { index: 1, model: 'gen-b' },
      baseline_launch: { index: 0, model: 'gen-b' },
      matched: 2,
      ties: 2,
      mean_difference: 0,
      confidence_interval: { level: 0.95, lower: 0, upper: 0 },
    });
    expect(res.body.unmatched_launches).toEqual({
      run: [{ index: 0, model: 'gen-a' }],
      baseline: [{ index: 1, model: 'gen-c' }],
    });

    const a = await run({
      evaluators: [quality],
      sample: { type: 'generate', models: ['gen-a'] },
      ground_truth,
    });
    const c = await run({
      evaluators: [quality],
      sample: { type: 'generate', models: ['gen-c'] },
      ground_truth,
    });
    const single = (await compare(a, `baseline=${c}`)).body;
    // gen-a scores 0.3 and gen-c 0.5 on both questions: d = −0.2 twice, no spread, worse.
    expect(single.comparisons[0]).toMatchObject({
      launch: { index: 0, model: 'gen-a' },
      baseline_launch: { index: 0, model: 'gen-c' },
      matched: 2,
      losses: 2,
      verdict: 'worse',
    });
    expect(single.comparisons[0].mean_difference).toBeCloseTo(-0.2, 12);
    expect(single.comparisons[0].confidence_interval.upper).toBeCloseTo(-0.2, 9);
    expect(single.summary).toMatchObject({ worse: 1, better: 0, losses: 2 });

    // Two launches against one of another model: nothing to pair.
    const none = await compare(ab, `baseline=${c}`);
    expect(none.status).toBe(422);
    expect(none.body.detail[0]).toMatchObject({ loc: ['query', 'baseline'], type: 'nothing_in_common' });
  });

  it('answers 422 for runs with nothing in common', async () => {
    const other = await run({ evaluators: [runOnly], ...onDataset('pos-run') });
    const noEvaluator = await compare(other, `baseline=${byPosBase}`);
    expect(noEvaluator.status).toBe(422);
    expect(noEvaluator.body).toEqual({
      detail: [
        { loc: ['query', 'baseline'], msg: 'The two runs share no evaluator', type: 'nothing_in_common' },
      ],
    });

    // A shared evaluator, but the baseline has no output to score: no position is scored in both.
    const unscored = await run({ evaluators: [positional], ...onDataset('empty-outputs') });
    const noPosition = await compare(byPosBase, `baseline=${unscored}`);
    expect(noPosition.status).toBe(422);
    expect(noPosition.body.detail).toEqual([
      { loc: ['query', 'baseline'], msg: 'No position is scored in both runs', type: 'nothing_in_common' },
    ]);
  });

  it('compares a run that is still running, saying the comparison is partial', async () => {
    await dataset('held', [{ output: 's:0.5' }, { output: 's:0.5' }, { output: 'hold s:0.9' }]);
    const held = await start({ evaluators: [positional], ...onDataset('held') });
    await waitFor(
      async () => (await h.call('GET', `/v1/evaluation/runs/${held}/samples`)).body.total === 2,
      20_000,
    );
    const partial = await compare(held, `baseline=${byPosBase}`);
    expect(partial.status, JSON.stringify(partial.body)).toBe(200);
    expect(partial.body).toMatchObject({
      partial: true,
      run_status: 'running',
      baseline_status: 'completed',
    });
    // Positions 0 and 1: 0.5 − 0.2 and 0.5 − 0.4, two wins.
    expect(partial.body.comparisons[0]).toMatchObject({ matched: 2, wins: 2, unmatched: { baseline: 1 } });
    expect(partial.body.comparisons[0].mean_difference).toBeCloseTo(0.2, 12);

    release();
    await finished(held);
    const full = await compare(held, `baseline=${byPosBase}`);
    expect(full.body).toMatchObject({ partial: false, run_status: 'completed' });
    expect(full.body.comparisons[0]).toMatchObject({ matched: 3, wins: 3 });
  });

  it('keeps runs to their project: another project’s run is not found', async () => {
    const stranger = await h.key(['*'], 'other');
    const ours = await compare(byIdRun, `baseline=${byIdBase}`, stranger.key);
    expect(ours.status).toBe(404);
    expect(ours.body.error.code).toBe('not_found');
    await setUpProject(stranger.key);
    await dataset('theirs', [{ id: 'a', output: 's:0.1' }], stranger.key);
    const theirJudge = await judge('quality', stranger.key);
    const theirs = await finished(
      await start({ evaluators: [theirJudge], ...onDataset('theirs') }, stranger.key),
      stranger.key,
    );
    for (const [runId, baseline, key] of [
      [byIdRun, theirs, undefined],
      [theirs, byIdBase, undefined],
      [theirs, byIdBase, stranger.key],
      [byIdRun, theirs, stranger.key],
    ] as const) {
      const res = await compare(runId, `baseline=${baseline}`, key);
      expect(res.status, `${runId} vs ${baseline}`).toBe(404);
      expect(res.body.error.code).toBe('not_found');
    }
    expect((await compare(theirs, `baseline=${theirs}`, stranger.key)).status).toBe(200);
  });

  it('needs a key with evaluation:read, and data:read for runs over datasets', async () => {
    const query = `baseline=${byIdBase}`;
    const none = await compare(byIdRun, query, null);
    expect(none.status).toBe(401);
    expect(none.body.error.code).toBe('invalid_api_key');
    const writer = await h.key(['evaluation:write']);
    const denied = await compare(byIdRun, query, writer.key);
    expect(denied.status).toBe(403);
    expect(denied.body.error).toMatchObject({
      code: 'permission_denied',
      details: { required: 'evaluation:read' },
    });
    // Both runs read datasets: like their samples, the comparison shows those rows, so data:read is needed too.
    const blind = await h.key(['evaluation:read']);
    const noData = await compare(byIdRun, query, blind.key);
    expect(noData.status).toBe(403);
    expect(noData.body.error).toMatchObject({
      code: 'permission_denied',
      details: { required: 'data:read' },
    });
    const reader = await h.key(['evaluation:read', 'data:read']);
    expect((await compare(byIdRun, query, reader.key)).status).toBe(200);
  });

  it('validates the query and finds unknown runs', async () => {
    const missing = await h.call('GET', `/v1/evaluation/runs/${byIdRun}/compare`);
    expect(missing.status).toBe(422);
    expect(missing.body.detail).toEqual([expect.objectContaining({ loc: ['query', 'baseline'] })]);
    for (const query of ['baseline=', `baseline=${byIdBase}&baseline=${byIdRun}`]) {
      const res = await compare(byIdRun, query);
      expect(res.status, query).toBe(422);
      expect(res.body.detail[0].loc, query).toEqual(['query', 'baseline']);
    }
    for (const query of ['limit=0', 'limit=101', 'limit=two']) {
      const res = await compare(byIdRun, `baseline=${byIdBase}&${query}`);
      expect(res.status, query).toBe(422);
      expect(res.body.detail[0].loc, query).toEqual(['query', 'limit']);
    }
    const unknownBaseline = await compare(byIdRun, 'baseline=run_nope');
    expect(unknownBaseline.status).toBe(404);
    expect(unknownBaseline.body.error.details).toEqual({ resource: 'run', ref: 'run_nope' });
    expect((await compare('run_nope', `baseline=${byIdBase}`)).status).toBe(404);
  });
});
