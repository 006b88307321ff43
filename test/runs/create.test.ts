import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Harness, startHarness } from '../helpers/harness.js';
import { waitFor } from '../helpers/wait.js';

let h: Harness;
let judgeId: string;

// The judge model's upstream is a closed port: these tests are about the API, not about execution.
beforeAll(async () => {
  h = await startHarness({
    env: {
      OPENAI_API_KEY: 'sk-test',
      OPENAI_BASE_URL: 'http://127.0.0.1:9/v1',
      EVALGATE_ENVIRONMENTS: 'main,staging',
    },
  });
  await h.call('POST', '/v1/containers', { body: { label: 'app' } });
  await h.call('POST', '/v1/containers', { body: { label: 'other-app' } });
  const judge = await h.call('POST', '/v1/evaluators', {
    body: { type: 'judge', name: 'helpful', model: 'openai/gpt-4o-mini', prompt: 'Rate {{output}}' },
  });
  judgeId = judge.body.id;
  await h.call('POST', '/v1/evaluators', {
    body: {
      type: 'judge',
      name: 'pairwise',
      mode: 'pairwise',
      model: 'openai/gpt-4o-mini',
      prompt: 'Which is better?',
    },
  });
  await h.call('POST', '/v1/evaluators', {
    body: {
      type: 'judge',
      name: 'scoped',
      model: 'openai/gpt-4o-mini',
      prompt: 'x {{output}}',
      container: 'other-app',
    },
  });
  const ds = await h.call('POST', '/v1/datasets', {
    body: { label: 'qa', items: [{ input: 'q1', output: 'a1', expected: 'a1' }] },
  });
  expect(ds.status).toBe(201);
});
afterAll(async () => {
  await h.close();
});

const base = { container: 'app', evaluators: ['helpful'] };

async function expect422(body: unknown, loc: (string | number)[], type?: string) {
  const res = await h.call('POST', '/v1/evaluation/runs', { body });
  expect(res.status, JSON.stringify(res.body)).toBe(422);
  const entry = res.body.detail.find(
    (d: { loc: unknown[] }) => JSON.stringify(d.loc) === JSON.stringify(loc),
  );
  expect(entry, `no entry at ${JSON.stringify(loc)} in ${JSON.stringify(res.body.detail)}`).toBeTruthy();
  if (type) expect(entry.type).toBe(type);
  return res.body.detail;
}

describe('run creation: validation (422)', () => {
  it('checks the top-level body', async () => {
    await expect422(
      { evaluators: ['helpful'], sample: { type: 'dataset', dataset: 'qa' } },
      ['body', 'container'],
      'missing',
    );
    await expect422(
      { container: 'app', evaluators: [], sample: { type: 'dataset', dataset: 'qa' } },
      ['body', 'evaluators'],
      'too_short',
    );
    await expect422(
      { ...base, sample: { type: 'dataset', dataset: 'qa' }, color: 'red' },
      ['body', 'color'],
      'extra_forbidden',
    );
    await expect422({ ...base, sample: { type: 'dataset', dataset: 'qa' }, evaluators: [''] }, [
      'body',
      'evaluators',
      0,
    ]);
    await expect422({ ...base, sample: { type: 'dataset', dataset: 'qa' }, metadata: [] }, [
      'body',
      'metadata',
    ]);
  });

  it('applies rules 1 and 3 of the contract', async () => {
    const d1 = await expect422({ ...base }, ['body'], 'value_error');
    expect(d1[0].msg).toMatch(/sample and ground_truth/);
    await expect422({ ...base, sample: null, ground_truth: null }, ['body'], 'value_error');
    const d3 = await expect422(
      { ...base, sample: { type: 'generate', models: ['openai/a'] }, ground_truth: { models: ['openai/b'] } },
      ['body'],
      'value_error',
    );
    expect(d3[0].msg).toMatch(/must not be of type generate/);
  });

  it('checks each data source variant, rejecting unknown and foreign properties', async () => {
    await expect422({ ...base, sample: { type: 'dataset' } }, ['body', 'sample', 'dataset'], 'missing');
    await expect422(
      { ...base, sample: { type: 'dataset', dataset: 'qa', models: ['m'] } },
      ['body', 'sample', 'models'],
      'extra_forbidden',
    );
    await expect422({ ...base, sample: { type: 'container' } }, ['body', 'sample', 'container'], 'missing');
    await expect422(
      { ...base, ground_truth: { type: 'container', container: 'app', dataset: 'qa' } },
      ['body', 'ground_truth', 'dataset'],
      'extra_forbidden',
    );
    await expect422(
      { ...base, sample: { type: 'generate', models: [] }, ground_truth: { type: 'dataset', dataset: 'qa' } },
      ['body', 'sample', 'models'],
      'too_short',
    );
    await expect422(
      { ...base, sample: { models: [''] }, ground_truth: { type: 'dataset', dataset: 'qa' } },
      ['body', 'sample', 'models', 0],
      'string_too_short',
    );
    // type defaults to generate, which needs models.
    await expect422(
      { ...base, sample: {}, ground_truth: { type: 'dataset', dataset: 'qa' } },
      ['body', 'sample', 'models'],
      'missing',
    );
    await expect422(
      { ...base, sample: { type: 'dataset', dataset: 'qa', extra: 1 } },
      ['body', 'sample', 'extra'],
      'extra_forbidden',
    );
    await expect422({ ...base, sample: { type: 'file', dataset: 'qa' } }, ['body', 'sample', 'type'], 'enum');
    await expect422(
      {
        ...base,
        baseline: { type: 'dataset', dataset: 'qa', bogus: true },
        sample: { type: 'dataset', dataset: 'qa' },
      },
      ['body', 'baseline', 'bogus'],
    );
  });

  it('checks ranges', async () => {
    await expect422(
      { ...base, sample: { type: 'dataset', dataset: 'qa', range: '1-5' } },
      ['body', 'sample', 'range'],
      'string_pattern_mismatch',
    );
    await expect422(
      { ...base, sample: { type: 'dataset', dataset: 'qa', range: '-1:5' } },
      ['body', 'sample', 'range'],
      'string_pattern_mismatch',
    );
    await expect422(
      { ...base, sample: { type: 'dataset', dataset: 'qa', range: '9:3' } },
      ['body', 'sample', 'range'],
      'value_error',
    );
    await expect422({ ...base, sample: { type: 'dataset', dataset: 'qa', range: 7 } }, [
      'body',
      'sample',
      'range',
    ]);
  });

  it('checks environment, pairwise baselines and evaluator scope', async () => {
    await expect422(
      { ...base, sample: { type: 'dataset', dataset: 'qa' }, environment: 'prod' },
      ['body', 'environment'],
      'enum',
    );
    await expect422(
      { container: 'app', evaluators: ['pairwise'], sample: { type: 'dataset', dataset: 'qa' } },
      ['body', 'baseline'],
      'missing',
    );
    await expect422(
      { container: 'app', evaluators: ['scoped'], sample: { type: 'dataset', dataset: 'qa' } },
      ['body', 'evaluators', 0],
    );
    await expect422(
      { container: 'app', evaluators: ['helpful', judgeId], sample: { type: 'dataset', dataset: 'qa' } },
      ['body', 'evaluators', 1],
    );
  });
});

describe('run creation: references (404) and success', () => {
  const cases: [string, unknown, string][] = [
    ['container', { ...base, container: 'nope', sample: { type: 'dataset', dataset: 'qa' } }, 'container'],
    ['evaluator', { ...base, evaluators: ['nope'], sample: { type: 'dataset', dataset: 'qa' } }, 'evaluator'],
    ['dataset', { ...base, sample: { type: 'dataset', dataset: 'nope' } }, 'dataset'],
    ['source container', { ...base, sample: { type: 'container', container: 'nope' } }, 'container'],
    [
      'model',
      {
        ...base,
        sample: { type: 'generate', models: ['no-such-model'] },
        ground_truth: { type: 'dataset', dataset: 'qa' },
      },
      'model',
    ],
  ];
  for (const [name, body, resource] of cases) {
    it(`answers 404 naming the missing ${name}`, async () => {
      const res = await h.call('POST', '/v1/evaluation/runs', { body });
      expect(res.status).toBe(404);
      expect(res.body.error.code).toBe('not_found');
      expect(res.body.error.details.resource).toBe(resource);
      expect(res.body.error.message).toMatch(/nope|no-such-model/);
    });
  }

  it('answers 201 with a queued run, the request as config and the resolved sides', async () => {
    const body = {
      ...base,
      sample: { type: 'dataset', dataset: 'qa', range: '0:1' },
      metadata: { ticket: 7 },
      environment: 'staging',
    };
    const res = await h.call('POST', '/v1/evaluation/runs', { body });
    expect(res.status).toBe(201);
    const run = res.body;
    expect(run).toMatchObject({
      object: 'evaluation.run',
      status: 'queued',
      environment: 'staging',
      metadata: { ticket: 7 },
    });
    expect(run.id).toMatch(/^run_/);
    expect(run.config).toEqual(body);
    expect(run.evaluators).toEqual([judgeId]);
    expect(run.sample).toMatchObject({ type: 'dataset', range: '0:1' });
    expect(run.sample.dataset).toMatch(/^ds_/);
    expect(run.dataset_id).toBe(run.sample.dataset);
    // The omitted side resolves to the container's task logs.
    expect(run.ground_truth).toMatchObject({ type: 'container', range: '0:100' });
    expect(run.ground_truth.container).toBe(run.container);
    expect(run.baseline).toBeNull();
    const got = await h.call('GET', `/v1/evaluation/runs/${run.id}`);
    expect(got.body.id).toBe(run.id);
  });

  it('honours Idempotency-Key: same body → same run, other body → 409', async () => {
    const body = { ...base, sample: { type: 'dataset', dataset: 'qa' } };
    const headers = { 'idempotency-key': 'abc-123' };
    const first = await h.call('POST', '/v1/evaluation/runs', { body, headers });
    const again = await h.call('POST', '/v1/evaluation/runs', { body: { ...body }, headers });
    expect(first.status).toBe(201);
    expect(again.body.id).toBe(first.body.id);
    const other = await h.call('POST', '/v1/evaluation/runs', {
      body: { ...body, metadata: { x: 1 } },
      headers,
    });
    expect(other.status).toBe(409);
    expect(other.body.error.code).toBe('idempotency_key_reused');
  });
});

describe('run reads, auth and isolation', () => {
  it('lists newest first with container and status filters and pagination', async () => {
    const a = await h.call('POST', '/v1/evaluation/runs', {
      body: { ...base, sample: { type: 'dataset', dataset: 'qa' } },
    });
    const b = await h.call('POST', '/v1/evaluation/runs', {
      body: { ...base, sample: { type: 'dataset', dataset: 'qa' } },
    });
    const list = await h.call('GET', '/v1/evaluation/runs?container=app&limit=2');
    expect(list.body.data.map((r: { id: string }) => r.id)).toEqual([b.body.id, a.body.id]);
    expect(list.body.total).toBeGreaterThanOrEqual(2);
    const none = await h.call('GET', '/v1/evaluation/runs?container=other-app');
    expect(none.body).toEqual({ object: 'list', data: [], total: 0 });
    const unknown = await h.call('GET', '/v1/evaluation/runs?container=nope');
    expect(unknown.body.total).toBe(0);
    const byStatus = await h.call('GET', '/v1/evaluation/runs?status=no-such-status');
    expect(byStatus.status).toBe(422);
    expect(byStatus.body.detail[0].loc).toEqual(['query', 'status']);
    expect((await h.call('GET', '/v1/evaluation/runs?limit=0')).status).toBe(422);
    expect((await h.call('GET', '/v1/evaluation/runs?limit=101')).status).toBe(422);
    expect((await h.call('GET', '/v1/evaluation/runs?offset=-1')).status).toBe(422);
  });

  it('requires a valid key with the right permission and hides other projects', async () => {
    const run = await h.call('POST', '/v1/evaluation/runs', {
      body: { ...base, sample: { type: 'dataset', dataset: 'qa' } },
    });
    expect((await h.call('GET', '/v1/evaluation/runs', { key: null })).status).toBe(401);
    const reader = await h.key(['evaluation:read']);
    expect((await h.call('GET', `/v1/evaluation/runs/${run.body.id}`, { key: reader.key })).status).toBe(200);
    const denied = await h.call('POST', '/v1/evaluation/runs', {
      key: reader.key,
      body: { ...base, sample: { type: 'dataset', dataset: 'qa' } },
    });
    expect(denied.status).toBe(403);
    expect(denied.body.error.code).toBe('permission_denied');
    const stranger = await h.key(['*'], 'someone-else');
    expect((await h.call('GET', `/v1/evaluation/runs/${run.body.id}`, { key: stranger.key })).status).toBe(
      404,
    );
    expect(
      (await h.call('POST', `/v1/evaluation/runs/${run.body.id}/cancel`, { key: stranger.key })).status,
    ).toBe(404);
    expect(
      (await h.call('GET', `/v1/evaluation/runs/${run.body.id}/samples`, { key: stranger.key })).status,
    ).toBe(404);
    expect((await h.call('GET', '/v1/evaluation/runs', { key: stranger.key })).body.total).toBe(0);
    // Their own run creation cannot see our container.
    const theirs = await h.call('POST', '/v1/evaluation/runs', {
      key: stranger.key,
      body: { ...base, sample: { type: 'dataset', dataset: 'qa' } },
    });
    expect(theirs.status).toBe(404);
    expect((await h.call('GET', '/v1/evaluation/runs/run_nope')).status).toBe(404);
  });

  it('keeps a container that runs reference from being deleted (409 container_in_use)', async () => {
    const c = await h.call('POST', '/v1/containers', { body: { label: 'with-runs' } });
    const run = await h.call('POST', '/v1/evaluation/runs', {
      body: { container: 'with-runs', evaluators: ['helpful'], sample: { type: 'dataset', dataset: 'qa' } },
    });
    expect(run.status).toBe(201);
    const del = await h.call('DELETE', `/v1/containers/${c.body.id}`);
    expect(del.status).toBe(409);
    expect(del.body.error).toMatchObject({ code: 'container_in_use', details: { evaluators: 0, runs: 1 } });
  });

  it('cancels a run once; cancelling again is a 409', async () => {
    const run = await h.call('POST', '/v1/evaluation/runs', {
      body: { ...base, sample: { type: 'dataset', dataset: 'qa' } },
    });
    const cancelled = await h.call('POST', `/v1/evaluation/runs/${run.body.id}/cancel`);
    expect(cancelled.status).toBe(200);
    expect(['cancelled', 'running']).toContain(cancelled.body.status);
    await waitFor(
      async () => (await h.call('GET', `/v1/evaluation/runs/${run.body.id}`)).body.status === 'cancelled',
    );
    const again = await h.call('POST', `/v1/evaluation/runs/${run.body.id}/cancel`);
    expect(again.status).toBe(409);
  });
});

describe('models that cannot serve the run', () => {
  it('answers 422 naming the side when its provider is not enabled', async () => {
    await h.call('POST', '/v1/datasets', {
      body: { label: 'qa-gen', items: [{ input: 'q', expected: 'a' }] },
    });
    const res = await h.call('POST', '/v1/evaluation/runs', {
      body: {
        container: 'app',
        evaluators: [judgeId],
        sample: { type: 'generate', models: ['anthropic/claude-haiku-4-5'] },
        ground_truth: { type: 'dataset', dataset: 'qa-gen' },
      },
    });
    expect(res.status).toBe(422);
    expect(res.body.detail[0]).toMatchObject({
      loc: ['body', 'sample', 'models', 0],
      type: 'provider_not_configured',
    });
    expect(res.body.detail[0].msg).toMatch(/ANTHROPIC_API_KEY/);
  });
});
