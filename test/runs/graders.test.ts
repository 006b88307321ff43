import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { GraderEvaluator } from '../../src/client/index.js';
import { metricPoolState } from '../../src/scoring/graders/metric-pool.js';
import {
  type MockRequest,
  type MockUpstream,
  mockEmbedding,
  startMockUpstream,
} from '../fixtures/mock-upstream.js';
import { type Harness, startHarness } from '../helpers/harness.js';
import { waitFor } from '../helpers/wait.js';

let h: Harness;
let mock: MockUpstream;

/** Judge replies scripted by the prompt: score 0.7, except garbage for the item "x"; labels by answer. */
function reply(req: MockRequest) {
  const text = req.lastUserText;
  if (req.body?.response_format?.json_schema?.name === 'label') {
    const ok = text.includes('A: 4') || text.includes('A: yes');
    return {
      json: { label: ok ? 'correct' : 'incorrect', reasoning: 'checked' },
      promptTokens: 10,
      completionTokens: 2,
    };
  }
  if (text.includes('Q: x ')) return { text: 'no idea', promptTokens: 4, completionTokens: 2 };
  return { json: { score: 0.7, reasoning: 'fine' }, promptTokens: 10, completionTokens: 2 };
}

const ITEMS = [
  { input: '2+2', output: '4', expected: '4' },
  { input: 'capital of France', output: 'Paris is the capital', expected: 'Paris' },
  { input: 'x', output: 'wrong', expected: 'right' },
  { input: 'q', output: 'yes', expected: 'yes' },
];

beforeAll(async () => {
  mock = await startMockUpstream({ reply });
  h = await startHarness();
  for (const label of ['judge', 'embedder']) {
    await h.call('POST', '/v1/models', {
      body: { label, provider: 'openai-compatible', base_url: mock.baseUrl, upstream_model: label },
    });
  }
  await h.call('POST', '/v1/containers', { body: { label: 'c' } });
  const ds = await h.call('POST', '/v1/datasets', { body: { label: 'qa', items: ITEMS } });
  expect(ds.status, JSON.stringify(ds.body)).toBe(201);
});
afterAll(async () => {
  await h?.close();
  await mock?.close();
});

async function create(body: Record<string, unknown>): Promise<GraderEvaluator> {
  const res = await h.call('POST', '/v1/evaluators', { body });
  expect(res.status, JSON.stringify(res.body)).toBe(201);
  return res.body;
}

async function runToEnd(evaluators: string[], dataset = 'qa') {
  const src = { type: 'dataset', dataset };
  const created = await h.call('POST', '/v1/evaluation/runs', {
    body: { container: 'c', evaluators, sample: src, ground_truth: src },
  });
  expect(created.status, JSON.stringify(created.body)).toBe(201);
  const terminal = ['completed', 'error', 'cancelled'];
  await waitFor(
    async () =>
      terminal.includes((await h.call('GET', `/v1/evaluation/runs/${created.body.id}`)).body.status),
    60_000,
  );
  return (await h.call('GET', `/v1/evaluation/runs/${created.body.id}`)).body;
}

const cosineOf = (x: string, y: string) => {
  const [a, b] = [mockEmbedding(x), mockEmbedding(y)];
  const dot = a.reduce((s, v, i) => s + v * (b[i] as number), 0);
  const norm = (v: number[]) => Math.sqrt(v.reduce((s, e) => s + e * e, 0));
  // A zero vector ("4" has no letters) has no direction: its cosine is 0.
  return norm(a) === 0 || norm(b) === 0 ? 0 : dot / (norm(a) * norm(b));
};

describe('evaluators of the grader types', () => {
  it('creates, reads, updates and lists them with every field present', async () => {
    const sc = await create({
      type: 'string_check',
      name: 'sc-crud',
      input: '{{sample.output_text}}',
      reference: '{{item.expected}}',
      operation: 'eq',
    });
    expect(sc).toMatchObject({
      object: 'evaluator.string_check',
      name: 'sc-crud',
      operation: 'eq',
      model: null,
      labels: null,
      range: null,
      mode: 'pointwise',
    });
    const patched = await h.call('PATCH', `/v1/evaluators/${sc.id}`, { body: { operation: 'ilike' } });
    expect(patched.status, JSON.stringify(patched.body)).toBe(200);
    expect(patched.body).toMatchObject({ operation: 'ilike', input: '{{sample.output_text}}' });
    const got = await h.call('GET', '/v1/evaluators/sc-crud');
    expect(got.body.operation).toBe('ilike');
    const sm = await create({
      type: 'score_model',
      name: 'sm-crud',
      model: 'judge',
      input: [{ role: 'user', content: '{{sample.output_text}}' }],
    });
    expect(sm).toMatchObject({
      object: 'evaluator.score_model',
      model: 'judge',
      range: [0, 1],
      sampling_params: null,
    });
    const list = await h.call('GET', '/v1/evaluators?limit=100');
    expect(list.body.data.map((e: { name: string }) => e.name)).toEqual(
      expect.arrayContaining(['sc-crud', 'sm-crud']),
    );
  });

  it('reports every problem of a definition in one 422', async () => {
    const res = await h.call('POST', '/v1/evaluators', {
      body: {
        type: 'label_model',
        name: 'bad-label',
        model: 'judge',
        input: [{ role: 'user', content: '{{nope.x}}' }],
        labels: ['a'],
        passing_labels: ['b'],
        pass_threshold: 0.5,
        prompt: 'not for graders',
        operation: 'eq',
      },
    });
    expect(res.status).toBe(422);
    const locs = res.body.detail.map((d: { loc: string[] }) => d.loc.join('.'));
    expect(locs).toEqual(
      expect.arrayContaining([
        'body.input.0.content',
        'body.passing_labels.0',
        'body.pass_threshold',
        'body.prompt',
        'body.operation',
      ]),
    );
    const missing = await h.call('POST', '/v1/evaluators', {
      body: { type: 'text_similarity', name: 'ts-missing' },
    });
    expect(missing.status).toBe(422);
    expect(missing.body.detail.map((d: { loc: string[] }) => d.loc.join('.'))).toEqual(
      expect.arrayContaining(['body.input', 'body.reference', 'body.evaluation_metric']),
    );
    const judgeWithGraderField = await h.call('POST', '/v1/evaluators', {
      body: { type: 'judge', model: 'judge', prompt: 'p', labels: ['a'] },
    });
    expect(judgeWithGraderField.status).toBe(422);
  });

  it('scores a run over a dataset with each type, aggregated like the other evaluators', async () => {
    const sc = await create({
      type: 'string_check',
      name: 'sc',
      input: '{{sample.output_text}}',
      reference: '{{item.expected}}',
      operation: 'eq',
    });
    const rouge = await create({
      type: 'text_similarity',
      name: 'rouge',
      input: '{{sample.output_text}}',
      reference: '{{item.expected}}',
      evaluation_metric: 'rouge_l',
      pass_threshold: 0.5,
    });
    const cos = await create({
      type: 'text_similarity',
      name: 'cos',
      input: '{{sample.output_text}}',
      reference: '{{item.expected}}',
      evaluation_metric: 'cosine',
      embedding_model: 'embedder',
    });
    const score = await create({
      type: 'score_model',
      name: 'score',
      model: 'judge',
      input: [{ role: 'user', content: 'Q: {{item.input}} A: {{sample.output_text}}' }],
      pass_threshold: 0.5,
      sampling_params: { temperature: 0 },
    });
    const label = await create({
      type: 'label_model',
      name: 'label',
      model: 'judge',
      input: [{ role: 'user', content: 'Q: {{item.input}} A: {{sample.output_text}}' }],
      labels: ['correct', 'incorrect'],
      passing_labels: ['correct'],
    });
    const broken = await create({
      type: 'string_check',
      name: 'broken',
      input: '{{item.nope}}',
      reference: 'x',
      operation: 'eq',
    });
    const run = await runToEnd([sc.id, rouge.id, cos.id, score.id, label.id, broken.id]);
    expect(run.status, JSON.stringify(run.error)).toBe('completed');
    const per = run.results.per_model[0].per_eval;
    expect(per[sc.id]).toMatchObject({
      num_total: 4,
      num_scored: 4,
      num_passed: 2,
      num_failed: 2,
      num_errors: 0,
    });
    expect(per[sc.id].avg_score).toBeCloseTo(0.5, 12);
    // rouge_l: 1, 2·(1/4·1)/(1/4+1) = 0.4, 0, 1.
    expect(per[rouge.id]).toMatchObject({ num_scored: 4, num_passed: 2, num_failed: 2 });
    expect(per[rouge.id].avg_score).toBeCloseTo((1 + 0.4 + 0 + 1) / 4, 12);
    const cosines = ITEMS.map((i) => cosineOf(i.output, i.expected));
    expect(per[cos.id].num_scored).toBe(4);
    expect(per[cos.id].avg_score).toBeCloseTo(cosines.reduce((a, b) => a + b, 0) / 4, 9);
    // The judge's garbage for item "x" is an error, never a score.
    expect(per[score.id]).toMatchObject({ num_scored: 3, num_passed: 3, num_errors: 1 });
    expect(per[score.id].avg_score).toBeCloseTo(0.7, 12);
    expect(per[label.id]).toMatchObject({ num_scored: 4, num_passed: 2, num_failed: 2 });
    expect(per[broken.id]).toMatchObject({ num_total: 4, num_scored: 0, num_errors: 4 });
    const errors = await h.call('GET', `/v1/evaluation/runs/${run.id}/samples?evaluator=broken&errored=true`);
    expect(errors.body.data).toHaveLength(4);
    expect(errors.body.data[0].error).toMatchObject({ code: 'invalid_variable_error' });
    expect(errors.body.data[0].error.message).toMatch(/item has no field 'nope'/);
    const judged = await h.call('GET', `/v1/evaluation/runs/${run.id}/samples?evaluator=score&errored=true`);
    expect(judged.body.data[0].error.code).toBe('model_grader_parse_error');
  });

  it('errors an item whose text is over the caps, with the reason, and scores the others', async () => {
    const long = 'word '.repeat(60_000);
    // 5,000 characters: past the inline threshold, scored on the metric thread.
    const medium = 'word '.repeat(1_000);
    const ds = await h.call('POST', '/v1/datasets', {
      body: {
        label: 'long',
        items: [
          { input: 'a', output: 'short', expected: long },
          { input: 'b', output: medium, expected: medium },
          { input: 'c', output: 'abc', expected: 'abd' },
        ],
      },
    });
    expect(ds.status, JSON.stringify(ds.body)).toBe(201);
    const fuzzy = await create({
      type: 'text_similarity',
      name: 'fuzzy',
      input: '{{sample.output_text}}',
      reference: '{{item.expected}}',
      evaluation_metric: 'fuzzy_match',
    });
    const threaded = metricPoolState().finished;
    const run = await runToEnd([fuzzy.id], 'long');
    expect(run.status, JSON.stringify(run.error)).toBe('completed');
    expect(metricPoolState().finished).toBe(threaded + 1);
    const per = run.results.per_model[0].per_eval[fuzzy.id];
    expect(per).toMatchObject({ num_total: 3, num_scored: 2, num_errors: 1 });
    expect(per.avg_score).toBeCloseTo((1 + 2 / 3) / 2, 12);
    const errored = await h.call('GET', `/v1/evaluation/runs/${run.id}/samples?evaluator=fuzzy&errored=true`);
    expect(errored.body.data).toHaveLength(1);
    expect(errored.body.data[0].error).toEqual({
      code: 'text_too_long',
      message: 'the rendered reference has 300,000 characters; fuzzy_match takes at most 262,144',
    });
  });

  it('refuses a grader evaluator whose model another project registered', async () => {
    const other = await h.key(['*'], 'other-project');
    await h.call('POST', '/v1/containers', { key: other.key, body: { label: 'c' } });
    await h.call('POST', '/v1/datasets', { key: other.key, body: { label: 'qa', items: ITEMS } });
    const ev = await h.call('POST', '/v1/evaluators', {
      key: other.key,
      body: {
        type: 'label_model',
        name: 'l',
        model: 'judge',
        input: [{ role: 'user', content: 'x' }],
        labels: ['a'],
        passing_labels: ['a'],
      },
    });
    // Checked at creation, as a judge's model is: the model must resolve in the evaluator's own project.
    expect(ev.status).toBe(422);
    expect(ev.body.detail[0].loc).toEqual(['body', 'model']);
    expect(ev.body.detail[0].msg).toMatch(/judge/);
  });
});
