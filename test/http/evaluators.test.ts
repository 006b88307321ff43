import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Harness, registerStubModel, startHarness } from '../helpers/harness.js';

const SOURCE = 'def evaluate(sample, ground_truth, baseline):\n    return {"score": 1.0}\n';
const JUDGE = { type: 'judge', model: 'gpt-4o-mini', prompt: 'Rate {{output}} from 0 to 1' };

const COMMON_FIELDS = [
  'object',
  'project_id',
  'container_id',
  'container',
  'id',
  'name',
  'description',
  'created_at',
  'updated_at',
  'metadata',
  'pass_threshold',
  'mode',
  'scale',
  'template',
];
const JUDGE_FIELDS = [...COMMON_FIELDS, 'api', 'model', 'prompt', 'inference_parameters'].sort();
const CODE_FIELDS = [...COMMON_FIELDS, 'source', 'requirements'].sort();

let h: Harness;
let bot: { id: string; label: string };
let other: { id: string; label: string };

beforeAll(async () => {
  h = await startHarness();
  await registerStubModel(h, 'gpt-4o-mini');
  bot = (await h.call('POST', '/v1/containers', { body: { label: 'bot' } })).body;
  other = (await h.call('POST', '/v1/containers', { body: { label: 'other-bot' } })).body;
});
afterAll(async () => {
  await h.close();
});

/** The 422 entries of a response, as `loc` paths joined by dots. */
function locs(res: { status: number; body: any }): string[] {
  expect(res.status).toBe(422);
  return res.body.detail.map((d: { loc: unknown[] }) => d.loc.join('.'));
}

describe('creating evaluators', () => {
  it('creates a judge evaluator carrying every field, readable by id and by name', async () => {
    const created = await h.call('POST', '/v1/evaluators', {
      body: {
        ...JUDGE,
        container: 'bot',
        name: 'tone',
        description: 'Polite tone',
        metadata: { team: 'support', tags: ['a'] },
        pass_threshold: 0.7,
        mode: 'pairwise',
        api: 'chat_completions',
        inference_parameters: { temperature: 0, max_tokens: 5 },
      },
    });
    expect(created.status).toBe(201);
    const e = created.body;
    expect(Object.keys(e).sort()).toEqual(JUDGE_FIELDS);
    expect(e).toMatchObject({
      object: 'evaluator.judge',
      project_id: h.admin.projectId,
      container_id: bot.id,
      container: 'bot',
      name: 'tone',
      description: 'Polite tone',
      metadata: { team: 'support', tags: ['a'] },
      pass_threshold: 0.7,
      mode: 'pairwise',
      api: 'chat_completions',
      model: JUDGE.model,
      prompt: JUDGE.prompt,
      inference_parameters: { temperature: 0, max_tokens: 5 },
    });
    expect(e.id).toMatch(/^evl_[0-9a-z]{26}$/);
    expect(new Date(e.created_at).toISOString()).toBe(e.created_at);

    const byId = await h.call('GET', `/v1/evaluators/${e.id}`);
    expect(byId.status).toBe(200);
    expect(byId.body).toEqual(e);
    const byName = await h.call('GET', '/v1/evaluators/tone');
    expect(byName.body).toEqual(e);
  });

  it('applies the defaults: pointwise mode, name = id, empty description, no container', async () => {
    const res = await h.call('POST', '/v1/evaluators', { body: JUDGE });
    expect(res.status).toBe(201);
    expect(res.body).toMatchObject({
      mode: 'pointwise',
      name: res.body.id,
      description: '',
      container: null,
      container_id: null,
      pass_threshold: null,
      api: null,
      metadata: {},
      inference_parameters: {},
    });
  });

  it('accepts a container id as well as a label', async () => {
    const res = await h.call('POST', '/v1/evaluators', { body: { ...JUDGE, container: bot.id } });
    expect(res.status).toBe(201);
    expect(res.body).toMatchObject({ container_id: bot.id, container: 'bot' });
  });

  it('creates a code evaluator with source and requirements instead of judge fields', async () => {
    const res = await h.call('POST', '/v1/evaluators', {
      body: { type: 'code', source: SOURCE, requirements: ['numpy>=1.26'], container: 'bot', name: 'exact' },
    });
    expect(res.status).toBe(201);
    expect(Object.keys(res.body).sort()).toEqual(CODE_FIELDS);
    expect(res.body).toMatchObject({
      object: 'evaluator.code',
      source: SOURCE,
      requirements: ['numpy>=1.26'],
      mode: 'pointwise',
      container: 'bot',
    });
    expect((await h.call('GET', '/v1/evaluators/exact')).body).toEqual(res.body);
  });

  it('answers 409 conflict when the name is taken in the project', async () => {
    expect((await h.call('POST', '/v1/evaluators', { body: { ...JUDGE, name: 'dup' } })).status).toBe(201);
    const clash = await h.call('POST', '/v1/evaluators', {
      body: { type: 'code', source: SOURCE, name: 'dup' },
    });
    expect(clash.status).toBe(409);
    expect(clash.body.error.code).toBe('conflict');
    // Another project may use the same name.
    const elsewhere = await h.key(['*'], 'evaluators-elsewhere');
    await registerStubModel(h, JUDGE.model, elsewhere.key);
    const ok = await h.call('POST', '/v1/evaluators', {
      key: elsewhere.key,
      body: { ...JUDGE, name: 'dup' },
    });
    expect(ok.status).toBe(201);
  });

  it('answers 404 not_found for a container that does not exist', async () => {
    const res = await h.call('POST', '/v1/evaluators', { body: { ...JUDGE, container: 'nowhere' } });
    expect(res.status).toBe(404);
    expect(res.body.error.code).toBe('not_found');
  });
});

describe('evaluator validation (422)', () => {
  it('needs model and prompt for a judge, listing both', async () => {
    const res = await h.call('POST', '/v1/evaluators', { body: { type: 'judge' } });
    expect(locs(res).sort()).toEqual(['body.model', 'body.prompt']);
    expect(locs(await h.call('POST', '/v1/evaluators', { body: { type: 'judge', prompt: 'p' } }))).toEqual([
      'body.model',
    ]);
  });

  it('needs source for a code evaluator and refuses fields of the other type', async () => {
    expect(locs(await h.call('POST', '/v1/evaluators', { body: { type: 'code' } }))).toEqual(['body.source']);
    const mixed = await h.call('POST', '/v1/evaluators', { body: { ...JUDGE, source: SOURCE } });
    expect(locs(mixed)).toEqual(['body.source']);
    const mixed2 = await h.call('POST', '/v1/evaluators', {
      body: { type: 'code', source: SOURCE, model: 'm', inference_parameters: { temperature: 1 } },
    });
    expect(locs(mixed2).sort()).toEqual(['body.inference_parameters', 'body.model']);
  });

  it('checks the Python source: syntax errors name the line, evaluate must exist', async () => {
    const syntax = await h.call('POST', '/v1/evaluators', {
      body: { type: 'code', source: 'import math\n\ndef evaluate(sample, ground_truth baseline):\n  pass\n' },
    });
    expect(locs(syntax)).toEqual(['body.source']);
    expect(syntax.body.detail[0].msg).toMatch(/line 3/);
    const noEvaluate = await h.call('POST', '/v1/evaluators', {
      body: { type: 'code', source: 'def score(sample):\n    return 1\n' },
    });
    expect(locs(noEvaluate)).toEqual(['body.source']);
    expect(noEvaluate.body.detail[0].msg).toMatch(/evaluate/);
  });

  it('checks requirements one by one', async () => {
    const res = await h.call('POST', '/v1/evaluators', {
      body: { type: 'code', source: SOURCE, requirements: ['numpy', 'not a requirement!!'] },
    });
    expect(locs(res)).toEqual(['body.requirements.1']);
  });

  it('refuses unknown properties, bad enums and wrong types, listing every violation', async () => {
    const res = await h.call('POST', '/v1/evaluators', {
      body: { type: 'llm', mode: 'listwise', name: 7, pass_threshold: 'high', bogus: true },
    });
    expect(locs(res).sort()).toEqual([
      'body.bogus',
      'body.mode',
      'body.name',
      'body.pass_threshold',
      'body.type',
    ]);
    expect(locs(await h.call('POST', '/v1/evaluators', { body: { model: 'm' } }))).toContain('body.type');
    // Names must not look like ids.
    expect(locs(await h.call('POST', '/v1/evaluators', { body: { ...JUDGE, name: 'evl_x' } }))).toEqual([
      'body.name',
    ]);
  });
});

describe('patching evaluators', () => {
  it('patches by id and by name; explicit null clears nullable fields', async () => {
    const e = (
      await h.call('POST', '/v1/evaluators', {
        body: {
          ...JUDGE,
          name: 'patch-me',
          container: 'bot',
          description: 'd',
          pass_threshold: 0.5,
          mode: 'pairwise',
          api: 'messages',
          metadata: { a: 1 },
        },
      })
    ).body;
    const renamed = await h.call('PATCH', '/v1/evaluators/patch-me', {
      body: { name: 'patched', prompt: 'new prompt', container: 'other-bot', metadata: { b: 2 } },
    });
    expect(renamed.status).toBe(200);
    expect(renamed.body).toMatchObject({
      id: e.id,
      name: 'patched',
      prompt: 'new prompt',
      container_id: other.id,
      container: 'other-bot',
      metadata: { b: 2 },
      model: JUDGE.model,
      mode: 'pairwise',
    });
    expect(renamed.body.updated_at >= e.updated_at).toBe(true);
    expect(renamed.body.created_at).toBe(e.created_at);

    const cleared = await h.call('PATCH', `/v1/evaluators/${e.id}`, {
      body: { description: null, pass_threshold: null, api: null, container: null, mode: null, name: null },
    });
    expect(cleared.status).toBe(200);
    expect(cleared.body).toMatchObject({
      description: '',
      pass_threshold: null,
      api: null,
      container: null,
      container_id: null,
      mode: 'pointwise',
      name: e.id,
    });
    expect((await h.call('GET', `/v1/evaluators/${e.id}`)).body).toEqual(cleared.body);
    expect((await h.call('GET', '/v1/evaluators/patch-me')).status).toBe(404);
  });

  it('patches a code evaluator: new source is checked, null requirements clear them', async () => {
    const e = (
      await h.call('POST', '/v1/evaluators', {
        body: { type: 'code', source: SOURCE, requirements: ['numpy'] },
      })
    ).body;
    const bad = await h.call('PATCH', `/v1/evaluators/${e.id}`, { body: { source: 'def evaluate(:\n' } });
    expect(locs(bad)).toEqual(['body.source']);
    expect(bad.body.detail[0].msg).toMatch(/line 1/);
    const ok = await h.call('PATCH', `/v1/evaluators/${e.id}`, {
      body: { requirements: null, source: `${SOURCE}# v2\n` },
    });
    expect(ok.status).toBe(200);
    expect(ok.body).toMatchObject({ requirements: [], source: `${SOURCE}# v2\n`, object: 'evaluator.code' });
    expect(locs(await h.call('PATCH', `/v1/evaluators/${e.id}`, { body: { source: null } }))).toEqual([
      'body.source',
    ]);
    expect(locs(await h.call('PATCH', `/v1/evaluators/${e.id}`, { body: { prompt: 'p' } }))).toEqual([
      'body.prompt',
    ]);
  });

  it('answers 422 for type, unknown properties and clearing what a judge needs', async () => {
    const e = (await h.call('POST', '/v1/evaluators', { body: JUDGE })).body;
    expect(locs(await h.call('PATCH', `/v1/evaluators/${e.id}`, { body: { type: 'code' } }))).toEqual([
      'body.type',
    ]);
    expect(locs(await h.call('PATCH', `/v1/evaluators/${e.id}`, { body: { colour: 'red' } }))).toEqual([
      'body.colour',
    ]);
    expect(locs(await h.call('PATCH', `/v1/evaluators/${e.id}`, { body: { model: null } }))).toEqual([
      'body.model',
    ]);
    // Nothing was changed by the refused patches.
    expect((await h.call('GET', `/v1/evaluators/${e.id}`)).body).toEqual(e);
  });

  it('answers 409 on a rename to a taken name and 404 for unknown evaluators or containers', async () => {
    await h.call('POST', '/v1/evaluators', { body: { ...JUDGE, name: 'taken' } });
    const e = (await h.call('POST', '/v1/evaluators', { body: { ...JUDGE, name: 'free' } })).body;
    const clash = await h.call('PATCH', '/v1/evaluators/free', { body: { name: 'taken' } });
    expect(clash.status).toBe(409);
    expect(clash.body.error.code).toBe('conflict');
    const noContainer = await h.call('PATCH', '/v1/evaluators/free', { body: { container: 'nowhere' } });
    expect(noContainer.status).toBe(404);
    expect((await h.call('GET', `/v1/evaluators/${e.id}`)).body).toEqual(e);
    for (const [method, path] of [
      ['GET', '/v1/evaluators/missing'],
      ['PATCH', '/v1/evaluators/missing'],
      ['GET', '/v1/evaluators/evl_00000000000000000000000000'],
    ] as const) {
      const res = await h.call(method, path, method === 'PATCH' ? { body: { description: 'x' } } : {});
      expect(res.status).toBe(404);
      expect(res.body.error.code).toBe('not_found');
    }
  });
});

describe('deleting evaluators', () => {
  it('deletes by id, answering the delete object; then 404', async () => {
    const e = (await h.call('POST', '/v1/evaluators', { body: { ...JUDGE, name: 'doomed' } })).body;
    // Delete takes an id, not a name.
    const byName = await h.call('DELETE', '/v1/evaluators/doomed');
    expect(byName.status).toBe(404);
    expect(byName.body.error.message).toContain(`Delete takes an evaluator's id, not its name`);
    expect(byName.body.error.message).toContain(e.id);
    expect(byName.body.error.details).toMatchObject({ ref: 'doomed', id: e.id });
    expect((await h.call('GET', `/v1/evaluators/${e.id}`)).status).toBe(200);
    expect((await h.call('DELETE', '/v1/evaluators/nobody')).body.error.message).toBe(
      "Evaluator 'nobody' not found",
    );
    const del = await h.call('DELETE', `/v1/evaluators/${e.id}`);
    expect(del.status).toBe(200);
    expect(del.body).toEqual({ object: 'evaluator', id: e.id, deleted: true });
    expect((await h.call('GET', `/v1/evaluators/${e.id}`)).status).toBe(404);
    const again = await h.call('DELETE', `/v1/evaluators/${e.id}`);
    expect(again.status).toBe(404);
    expect(again.body.error.code).toBe('not_found');
  });
});

describe('listing evaluators', () => {
  it('lists newest first with limit, offset, total and a container filter by id or label', async () => {
    const { key } = await h.key(['*'], 'evaluator-listing');
    await registerStubModel(h, JUDGE.model, key);
    const c = (await h.call('POST', '/v1/containers', { key, body: { label: 'scope' } })).body;
    const ids: string[] = [];
    for (let i = 0; i < 23; i++) {
      const body = { ...JUDGE, name: `e${i}`, ...(i % 3 === 0 ? { container: 'scope' } : {}) };
      const res = await h.call('POST', '/v1/evaluators', { key, body });
      expect(res.status).toBe(201);
      ids.push(res.body.id);
    }
    const newestFirst = [...ids].reverse();
    const all = await h.call('GET', '/v1/evaluators', { key });
    expect(all.body.object).toBe('list');
    expect(all.body.total).toBe(23);
    expect(all.body.data.map((e: { id: string }) => e.id)).toEqual(newestFirst.slice(0, 20));

    const page = await h.call('GET', '/v1/evaluators?limit=5&offset=20', { key });
    expect(page.body.total).toBe(23);
    expect(page.body.data.map((e: { id: string }) => e.id)).toEqual(newestFirst.slice(20));
    const past = await h.call('GET', '/v1/evaluators?offset=100', { key });
    expect(past.body).toEqual({ object: 'list', data: [], total: 23 });

    const scoped = ids.filter((_, i) => i % 3 === 0).reverse();
    for (const ref of ['scope', c.id]) {
      const res = await h.call('GET', `/v1/evaluators?container=${ref}&limit=100`, { key });
      expect(res.body.total).toBe(scoped.length);
      expect(res.body.data.map((e: { id: string }) => e.id)).toEqual(scoped);
      expect(res.body.data.every((e: { container: string }) => e.container === 'scope')).toBe(true);
    }
    const none = await h.call('GET', '/v1/evaluators?container=nowhere', { key });
    expect(none.body).toEqual({ object: 'list', data: [], total: 0 });
  });

  it('answers 422 for limits out of 1..100 and negative or non-integer offsets', async () => {
    for (const [query, loc] of [
      ['limit=0', 'query.limit'],
      ['limit=101', 'query.limit'],
      ['limit=abc', 'query.limit'],
      ['limit=2.5', 'query.limit'],
      ['offset=-1', 'query.offset'],
      ['offset=1e400', 'query.offset'],
      ['offset=18446744073709551616', 'query.offset'],
    ]) {
      expect(locs(await h.call('GET', `/v1/evaluators?${query}`)), query).toEqual([loc]);
    }
    expect((await h.call('GET', '/v1/evaluators?limit=100&offset=0')).status).toBe(200);
  });
});

describe('without a Python interpreter', () => {
  it('answers 501 for code evaluators and still serves judges', async () => {
    const noPython = await startHarness({ env: { EVALGATE_PYTHON: '/nonexistent/python3' } });
    try {
      const code = await noPython.call('POST', '/v1/evaluators', { body: { type: 'code', source: SOURCE } });
      expect(code.status).toBe(501);
      expect(code.body.error.code).toBe('not_implemented');
      await registerStubModel(noPython, JUDGE.model);
      expect((await noPython.call('POST', '/v1/evaluators', { body: JUDGE })).status).toBe(201);
    } finally {
      await noPython.close();
    }
  });
});

describe('judge models are checked at creation', () => {
  it('answers 422 naming body.model for a model that does not resolve or a provider not enabled', async () => {
    const typo = await h.call('POST', '/v1/evaluators', { body: { ...JUDGE, model: 'gpt-4o-minii' } });
    expect(locs(typo)).toEqual(['body.model']);
    expect(typo.body.detail[0].type).toBe('model_not_found');
    expect(typo.body.detail[0].msg).toMatch(/Model 'gpt-4o-minii' not found/);
    const disabled = await h.call('POST', '/v1/evaluators', {
      body: { ...JUDGE, model: 'openai/gpt-4o-mini' },
    });
    expect(locs(disabled)).toEqual(['body.model']);
    expect(disabled.body.detail[0].type).toBe('provider_not_configured');
    expect(disabled.body.detail[0].msg).toMatch(/OPENAI_API_KEY/);
    // A patch to a bad model is refused too; one that leaves the model alone is not re-checked.
    const made = await h.call('POST', '/v1/evaluators', { body: { ...JUDGE, name: 'checked' } });
    expect(made.status).toBe(201);
    expect(locs(await h.call('PATCH', '/v1/evaluators/checked', { body: { model: 'nope' } }))).toEqual([
      'body.model',
    ]);
    expect(
      (await h.call('PATCH', '/v1/evaluators/checked', { body: { prompt: 'Rate {{output}}' } })).status,
    ).toBe(200);
  });

  it('answers 422 at run creation when an evaluator model no longer resolves', async () => {
    const modelId = await registerStubModel(h, 'short-lived');
    const ev = await h.call('POST', '/v1/evaluators', {
      body: { ...JUDGE, name: 'orphan', model: 'short-lived', container: 'bot' },
    });
    expect(ev.status).toBe(201);
    expect((await h.call('DELETE', `/v1/models/${modelId}`)).status).toBe(200);
    await h.call('POST', '/v1/datasets', { body: { label: 'one', items: [{ input: 'q', output: 'a' }] } });
    const run = await h.call('POST', '/v1/evaluation/runs', {
      body: { container: 'bot', evaluators: ['orphan'], sample: { type: 'dataset', dataset: 'one' } },
    });
    expect(locs(run)).toEqual(['body.evaluators.0']);
    expect(run.body.detail[0].msg).toMatch(/Evaluator 'orphan' cannot run: Model 'short-lived' not found/);
  });
});
