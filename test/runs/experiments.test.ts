import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { CreateRun } from '../../src/client/index.js';
import { evalgate, evalgateJson } from '../cli/cli-helpers.js';
import { clientOf } from '../client/helpers.js';
import { type MockRequest, type MockUpstream, startMockUpstream } from '../fixtures/mock-upstream.js';
import { type Harness, startHarness, type TestKey } from '../helpers/harness.js';
import { waitFor } from '../helpers/wait.js';

/*
 * Experiments: a generate side naming prompt versions × models over a pinned dataset version, one run,
 * compared per prompt version (and per model) with the paired comparison's intervals, through the API and
 * the CLI; and every way such a request can be wrong.
 */

let h: Harness;
let mock: MockUpstream;
let other: TestKey;

const between = (text: string, tag: string) => new RegExp(`${tag}<<([\\s\\S]*?)>>`).exec(text)?.[1] ?? '';

/**
 * Generators answer `good|…` when the rendered system message asks for care, `bad|…` otherwise. The judge
 * scores good answers 0.7–0.8 (plus 0.1 for gen-b) and bad ones 0.2–0.25, varying with the question's
 * number so the differences have a spread.
 */
function reply(req: MockRequest) {
  const model: string = req.body.model;
  if (model !== 'judge-model') {
    const system = String(req.body.messages?.[0]?.content ?? '');
    return `${system.includes('carefully') ? 'good' : 'bad'}|${model}|${req.lastUserText}`;
  }
  const out = between(req.lastUserText, 'OUT');
  const n = Number(/q(\d+)/.exec(out)?.[1] ?? 0);
  const [quality, gen] = out.split('|');
  const score =
    quality === 'good' ? 0.7 + 0.05 * (n % 3) + (gen === 'gen-b' ? 0.1 : 0) : 0.2 + 0.05 * (n % 2);
  return { json: { score, reasoning: `judged ${out}` } };
}

const QUESTIONS = Array.from({ length: 6 }, (_, i) => ({ input: { question: `q${i + 1}` }, expected: 'x' }));

async function prompt(name: string, body: Record<string, unknown>, key?: string) {
  const res = await h.call('POST', '/v1/prompts', { body: { name, ...body }, key });
  expect(res.status, res.text).toBe(201);
}

async function version(name: string, body: Record<string, unknown>) {
  const res = await h.call('POST', `/v1/prompts/${name}/versions`, { body });
  expect(res.status, res.text).toBe(201);
  return res.body.version as number;
}

const careful = [
  { role: 'system', content: 'Answer carefully.' },
  { role: 'user', content: 'Q: {{question}}' },
];
const sloppy = [
  { role: 'system', content: 'Answer sloppily.' },
  { role: 'user', content: 'Q: {{question}}' },
];

let evaluatorId: string;

beforeAll(async () => {
  mock = await startMockUpstream({ reply });
  h = await startHarness();
  other = await h.key(['*'], 'other-project');
  for (const [label, upstream] of [
    ['judge', 'judge-model'],
    ['gen-a', 'gen-a'],
    ['gen-b', 'gen-b'],
  ] as const) {
    const res = await h.call('POST', '/v1/models', {
      body: { label, provider: 'openai-compatible', base_url: mock.baseUrl, upstream_model: upstream },
    });
    expect(res.status, res.text).toBe(201);
  }
  expect((await h.call('POST', '/v1/containers', { body: { label: 'exp' } })).status).toBe(201);
  const ds = await h.call('POST', '/v1/datasets', { body: { label: 'qa', items: QUESTIONS } });
  expect(ds.status, ds.text).toBe(201);
  // Version 2 adds an item whose input lacks the variable: a run pinned to version 1 never reads it.
  const added = await h.call('POST', '/v1/datasets/qa/items', { body: { input: { topic: 'none' } } });
  expect(added.status, added.text).toBe(201);
  const ev = await h.call('POST', '/v1/evaluators', {
    body: {
      type: 'judge',
      name: 'quality',
      model: 'judge',
      prompt: 'Rate OUT<<{{output}}>>',
      pass_threshold: 0.5,
    },
  });
  expect(ev.status, ev.text).toBe(201);
  evaluatorId = ev.body.id;
  await prompt('qa', { messages: careful, model: 'gen-a', parameters: { temperature: 0.1 } });
  await version('qa', { messages: sloppy, model: 'gen-a', labels: ['staging'] });
  await prompt('typed', {
    messages: [{ role: 'user', content: 'Count {{question}}' }],
    variables: { question: 'number' },
  });
  await prompt('needs-context', { messages: [{ role: 'user', content: '{{question}} in {{context}}' }] });
  await prompt('secret', { messages: careful, model: 'gen-a' }, other.key);
}, 120_000);

afterAll(async () => {
  await h?.close();
  await mock?.close();
});

const experiment = (prompts: unknown[], models?: string[], extra: Record<string, unknown> = {}) => ({
  container: 'exp',
  evaluators: [evaluatorId],
  sample: { type: 'generate', prompts, ...(models ? { models } : {}) },
  ground_truth: { type: 'dataset', dataset: 'qa', version: 1 },
  ...extra,
});

async function finished(id: string) {
  await waitFor(async () => {
    const r = await h.call('GET', `/v1/evaluation/runs/${id}`);
    return ['completed', 'error', 'cancelled'].includes(r.body.status);
  }, 30_000);
  const done = await h.call('GET', `/v1/evaluation/runs/${id}`);
  expect(done.body.status, JSON.stringify(done.body.error)).toBe('completed');
  return done.body;
}

describe('an experiment: two prompt versions × two models over a pinned dataset version', () => {
  let runId: string;

  it('runs as one run of four launches, each saying which prompt version and model made it', async () => {
    const created = await h.call('POST', '/v1/evaluation/runs', {
      body: experiment(
        [
          { name: 'qa', version: 1 },
          { name: 'qa', label: 'staging' },
        ],
        ['gen-a', 'gen-b'],
      ),
    });
    expect(created.status, created.text).toBe(201);
    runId = created.body.id;
    // The label is resolved at the run's birth and recorded on it.
    expect(created.body.sample).toMatchObject({
      type: 'generate',
      models: ['gen-a', 'gen-b'],
      prompts: [
        { name: 'qa', version: 1, label: null },
        { name: 'qa', version: 2, label: 'staging' },
      ],
    });
    // Moving the label afterwards changes nothing for the run.
    expect((await h.call('PUT', '/v1/prompts/qa/labels/staging', { body: { version: 1 } })).status).toBe(200);
    const run = await finished(runId);
    expect(run.results.launch_count).toBe(4);
    const launches = run.results.per_model.map((m: any) => [
      m.model.slug,
      m.prompt.version,
      m.per_eval[evaluatorId].num_scored,
    ]);
    expect(launches).toEqual([
      ['gen-a', 1, 6],
      ['gen-b', 1, 6],
      ['gen-a', 2, 6],
      ['gen-b', 2, 6],
    ]);
    const score = (i: number) => run.results.per_model[i].per_eval[evaluatorId].avg_score as number;
    expect(score(0)).toBeGreaterThan(score(2));
    expect(score(1)).toBeGreaterThan(score(0));
    // The version's parameters went with the rendered messages through the model call.
    const generated = mock.requests.filter((r) => r.body.model === 'gen-a');
    expect(generated.length).toBeGreaterThanOrEqual(12);
    const temperature = (text: string) =>
      new Set(
        generated.filter((r) => r.body.messages[0].content.includes(text)).map((r) => r.body.temperature),
      );
    expect([...temperature('carefully')]).toEqual([0.1]);
    expect([...temperature('sloppily')]).toEqual([undefined]);
    expect(run.spend).toBeGreaterThanOrEqual(0);
    expect((await h.call('PUT', '/v1/prompts/qa/labels/staging', { body: { version: 2 } })).status).toBe(200);
  });

  it('compares per prompt version on each model, with intervals', async () => {
    const res = await h.call('GET', `/v1/evaluation/runs/${runId}/compare?by=prompt_version`);
    expect(res.status, res.text).toBe(200);
    expect(res.body).toMatchObject({ by: 'prompt_version', run_id: runId, baseline_id: runId });
    expect(res.body.comparisons).toHaveLength(2);
    for (const c of res.body.comparisons) {
      expect(c.launch.prompt.version).toBe(2);
      expect(c.baseline_launch.prompt.version).toBe(1);
      expect(c.launch.model).toBe(c.baseline_launch.model);
      expect(c.matched).toBe(6);
      expect(c.verdict).toBe('worse');
      expect(c.confidence_interval.upper).toBeLessThan(0);
      expect(c.confidence_interval.lower).toBeLessThan(c.confidence_interval.upper);
    }
    // The other way round: version 2 as the reference.
    const flipped = await h.call(
      'GET',
      `/v1/evaluation/runs/${runId}/compare?by=prompt_version&reference=qa@2`,
    );
    expect(flipped.status, flipped.text).toBe(200);
    expect(flipped.body.comparisons.map((c: any) => c.verdict)).toEqual(['better', 'better']);
    const staging = await h.call(
      'GET',
      `/v1/evaluation/runs/${runId}/compare?by=prompt_version&reference=qa@staging`,
    );
    expect(staging.body.comparisons.map((c: any) => c.baseline_launch.prompt.version)).toEqual([2, 2]);
  });

  it('compares per model on each prompt version', async () => {
    const res = await h.call('GET', `/v1/evaluation/runs/${runId}/compare?by=model`);
    expect(res.status, res.text).toBe(200);
    expect(res.body.comparisons).toHaveLength(2);
    const first = res.body.comparisons.find((c: any) => c.launch.prompt.version === 1);
    expect(first).toMatchObject({
      launch: { model: 'gen-b' },
      baseline_launch: { model: 'gen-a' },
      verdict: 'better',
    });
  });

  it('refuses comparisons that cannot be made, and another project’s key', async () => {
    const wrong = await h.call(
      'GET',
      `/v1/evaluation/runs/${runId}/compare?by=prompt_version&reference=qa@9`,
    );
    expect(wrong.status).toBe(422);
    expect(wrong.body.detail[0].loc).toEqual(['query', 'reference']);
    const both = await h.call('GET', `/v1/evaluation/runs/${runId}/compare?by=model&baseline=${runId}`);
    expect(both.status).toBe(422);
    const neither = await h.call('GET', `/v1/evaluation/runs/${runId}/compare`);
    expect(neither.status).toBe(422);
    const badBy = await h.call('GET', `/v1/evaluation/runs/${runId}/compare?by=colour`);
    expect(badBy.status).toBe(422);
    const foreign = await h.call('GET', `/v1/evaluation/runs/${runId}/compare?by=prompt_version`, {
      key: other.key,
    });
    expect(foreign.status).toBe(404);
    const samples = await h.call('GET', `/v1/evaluation/runs/${runId}/samples`, { key: other.key });
    expect(samples.status).toBe(404);
  });

  it('runs and compares from the CLI', async () => {
    const run = await evalgateJson(h, [
      'runs',
      'create',
      '--container',
      'exp',
      '--evaluator',
      'quality',
      '--prompt',
      'qa@1',
      '--prompt',
      'qa@staging',
      '--generate',
      'gen-a,gen-b',
      '--ground-truth',
      'dataset:qa@1',
      '--watch',
    ]);
    expect(run.status).toBe('completed');
    expect(run.sample.prompts.map((p: any) => p.version)).toEqual([1, 2]);
    expect(run.ground_truth).toMatchObject({ type: 'dataset', version: 1 });
    const text = await evalgate(h, ['runs', 'get', run.id]);
    expect(text.code, text.stderr).toBe(0);
    const shown = await evalgate(h, ['runs', 'compare', run.id, '--by', 'prompt_version']);
    expect(shown.code, shown.stderr).toBe(0);
    expect(shown.stdout).toContain('prompt versions compared');
    expect(shown.stdout).toContain('gen-a qa@2 vs 0 gen-a qa@1');
    expect(shown.stdout).toMatch(/worse/);
    const json = await evalgateJson(h, ['runs', 'compare', run.id, '--by', 'model']);
    // gen-b's answers score higher when they are good (version 1), the same when they are not.
    expect(json.comparisons.map((c: any) => [c.launch.prompt.version, c.verdict])).toEqual([
      [1, 'better'],
      [2, 'inconclusive'],
    ]);
    const usage = await evalgate(h, ['runs', 'compare', run.id]);
    expect(usage.code).not.toBe(0);
    expect(usage.stderr).toContain('--baseline');
  });

  it('runs and compares through the TypeScript client, whose types take the side as it is', async () => {
    const client = clientOf(h);
    const body: CreateRun = {
      container: 'exp',
      evaluators: ['quality'],
      sample: {
        type: 'generate',
        models: ['gen-a'],
        prompts: [
          { name: 'qa', version: 1 },
          { name: 'qa', label: 'staging' },
        ],
        parameters: { seed: 3 },
      },
      ground_truth: { type: 'dataset', dataset: 'qa', version: 1 },
    };
    const run = await client.runs.create(body);
    expect(run.sample?.prompts?.map((p) => `${p.name}@${p.version}:${p.label}`)).toEqual([
      'qa@1:null',
      'qa@2:staging',
    ]);
    await finished(run.id);
    const compared = await client.runs.compare(run.id, { by: 'prompt_version', reference: 'qa@1' });
    expect(compared.by).toBe('prompt_version');
    expect(compared.comparisons[0]?.launch.prompt).toMatchObject({
      name: 'qa',
      version: 2,
      label: 'staging',
    });
    expect(compared.comparisons[0]?.verdict).toBe('worse');
  });

  it('runs each version on its own model when the side names no models', async () => {
    const body = experiment([{ name: 'qa' }]);
    (body.sample as Record<string, unknown>).parameters = { seed: 11, temperature: 0.7 };
    const created = await h.call('POST', '/v1/evaluation/runs', { body });
    expect(created.status, created.text).toBe(201);
    expect(created.body.sample).toMatchObject({
      models: ['gen-a'],
      prompts: [{ name: 'qa', version: 2 }],
      parameters: { seed: 11, temperature: 0.7 },
    });
    const run = await finished(created.body.id);
    expect(run.results.per_model[0]).toMatchObject({ model: { slug: 'gen-a' }, prompt: { version: 2 } });
    // The side's parameters go over the version's own.
    const seeded = mock.requests.filter((r) => r.body.seed === 11);
    expect(seeded).toHaveLength(6);
    expect(seeded.every((r) => r.body.temperature === 0.7)).toBe(true);
  });
});

describe('an experiment that cannot run', () => {
  const create = (body: Record<string, unknown>, key?: string) =>
    h.call('POST', '/v1/evaluation/runs', { body, key });

  it('answers an unknown prompt, version or label, or another project’s prompt, 404 naming it', async () => {
    for (const pick of [
      { name: 'nope' },
      { name: 'qa', version: 9 },
      { name: 'qa', label: 'gone' },
      { name: 'secret' },
    ]) {
      const res = await create(experiment([{ name: 'qa', version: 1 }, pick], ['gen-a']));
      expect(res.status, res.text).toBe(404);
      expect(res.body.error.details.loc).toEqual(['body', 'sample', 'prompts', 1]);
    }
    // Another project's key does not see this project's prompt either.
    await h.call('POST', '/v1/containers', { body: { label: 'exp' }, key: other.key });
    const foreign = await create(experiment([{ name: 'qa', version: 1 }], ['gen-a']), other.key);
    expect(foreign.status).toBe(404);
  });

  it('answers 422 for missing or mistyped variables the dataset shows, and malformed picks', async () => {
    const missing = await create(experiment([{ name: 'needs-context' }], ['gen-a']));
    expect(missing.status, missing.text).toBe(422);
    expect(missing.body.detail[0]).toMatchObject({ loc: ['body', 'sample', 'prompts', 0], type: 'missing' });
    expect(missing.body.detail[0].msg).toContain("variable 'context' has no value");
    const typed = await create(experiment([{ name: 'typed' }], ['gen-a']));
    expect(typed.status, typed.text).toBe(422);
    expect(typed.body.detail[0].type).toBe('type_error');
    expect(typed.body.detail[0].msg).toContain("'question' must be a finite number");
    // Version 2 of the dataset has an item without the variable: pinned to it, the run is refused.
    const v2 = await create({
      ...experiment([{ name: 'qa', version: 1 }], ['gen-a']),
      ground_truth: { type: 'dataset', dataset: 'qa', version: 2 },
    });
    expect(v2.status, v2.text).toBe(422);
    const both = await create(experiment([{ name: 'qa', version: 1, label: 'staging' }], ['gen-a']));
    expect(both.status).toBe(422);
    expect(both.body.detail.map((d: any) => d.loc)).toContainEqual(['body', 'sample', 'prompts', 0]);
    const extra = await create(experiment([{ name: 'qa', tag: 'x' }], ['gen-a']));
    expect(extra.status).toBe(422);
    const empty = await create(experiment([], ['gen-a']));
    expect(empty.status).toBe(422);
    const onDataset = await create({
      ...experiment([]),
      sample: { type: 'dataset', dataset: 'qa', prompts: [{ name: 'qa' }] },
    });
    expect(onDataset.status).toBe(422);
    expect(onDataset.body.detail[0]).toMatchObject({
      loc: ['body', 'sample', 'prompts'],
      type: 'extra_forbidden',
    });
    const noModel = await prompt('modelless', { messages: careful }).then(() =>
      create(experiment([{ name: 'modelless' }])),
    );
    expect(noModel.status).toBe(422);
    expect(noModel.body.detail[0].msg).toContain('names no model');
  });

  it('records a per-sample error where the source cannot be checked at creation (task logs)', async () => {
    const imported = await h.call('POST', '/v1/containers/exp/logs', {
      body: [{ model: 'm', input: [{ role: 'user', content: 'hello' }], output: 'x' }],
    });
    expect(imported.status, imported.text).toBeLessThan(300);
    await waitFor(async () => (await h.call('GET', '/v1/containers/exp/logs')).body.data.length > 0, 10_000);
    const created = await create({
      container: 'exp',
      evaluators: [evaluatorId],
      sample: { type: 'generate', prompts: [{ name: 'qa', version: 1 }], models: ['gen-a'] },
      ground_truth: { type: 'container', container: 'exp' },
    });
    expect(created.status, created.text).toBe(201);
    const run = await finished(created.body.id);
    expect(run.results.per_model[0].per_eval[evaluatorId]).toMatchObject({ num_errors: 1, num_scored: 0 });
    const samples = await h.call('GET', `/v1/evaluation/runs/${created.body.id}/samples`);
    expect(samples.body.data[0].error).toMatchObject({ code: 'template_error' });
    expect(samples.body.data[0].error.message).toContain("variable 'question' has no value");
  });

  it('keeps a generate side without prompts as it was', async () => {
    const res = await create({
      container: 'exp',
      evaluators: [evaluatorId],
      sample: { type: 'generate' },
      ground_truth: { type: 'dataset', dataset: 'qa' },
    });
    expect(res.status).toBe(422);
    expect(res.body.detail).toContainEqual({
      loc: ['body', 'sample', 'models'],
      msg: 'Field required for a generate data source',
      type: 'missing',
    });
  });
});
