import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { evalgate } from '../cli/cli-helpers.js';
import { clientOf } from '../client/helpers.js';
import { type MockUpstream, startMockUpstream } from '../fixtures/mock-upstream.js';
import { testDbKind } from '../helpers/databases.js';
import { type Harness, startHarness } from '../helpers/harness.js';
import { waitFor } from '../helpers/wait.js';

// Runs carry an optional name: given at creation, changed or removed later, listed and filtered by it.
let h: Harness;
let mock: MockUpstream;

beforeAll(async () => {
  mock = await startMockUpstream({ reply: () => ({ json: { score: 1, reasoning: 'fine' } }) });
  h = await startHarness();
  const model = await h.call('POST', '/v1/models', {
    body: { label: 'judge', base_url: mock.baseUrl, upstream_model: 'judge-model' },
  });
  expect(model.status).toBe(201);
  expect((await h.call('POST', '/v1/containers', { body: { label: 'named-app' } })).status).toBe(201);
  const judge = await h.call('POST', '/v1/evaluators', {
    body: { type: 'judge', name: 'ok', model: 'judge', prompt: 'Rate {{output}}' },
  });
  expect(judge.status).toBe(201);
  const ds = await h.call('POST', '/v1/datasets', {
    body: { label: 'tiny', items: [{ input: 'q', output: 'a', expected: 'a' }] },
  });
  expect(ds.status).toBe(201);
});
afterAll(async () => {
  await h?.close();
  await mock?.close();
});

const body = (extra: Record<string, unknown> = {}) => ({
  container: 'named-app',
  evaluators: ['ok'],
  sample: { type: 'dataset', dataset: 'tiny' },
  ...extra,
});

describe('run names', () => {
  it('are given at creation, shown by get and list, filtered by list, and changed or removed by PATCH', async () => {
    const created = await h.call('POST', '/v1/evaluation/runs', { body: body({ name: 'nightly gpt-4o' }) });
    expect(created.status, created.text).toBe(201);
    expect(created.body.name).toBe('nightly gpt-4o');
    const id: string = created.body.id;
    const plain = await h.call('POST', '/v1/evaluation/runs', { body: body() });
    expect(plain.status).toBe(201);
    expect(plain.body.name).toBeNull();

    expect((await h.call('GET', `/v1/evaluation/runs/${id}`)).body.name).toBe('nightly gpt-4o');
    const listed = await h.call('GET', '/v1/evaluation/runs?limit=100');
    const names = Object.fromEntries(
      listed.body.data.map((r: { id: string; name: string }) => [r.id, r.name]),
    );
    expect(names[id]).toBe('nightly gpt-4o');
    expect(names[plain.body.id]).toBeNull();
    const filtered = await h.call('GET', `/v1/evaluation/runs?name=${encodeURIComponent('nightly gpt-4o')}`);
    expect(filtered.body.total).toBe(1);
    expect(filtered.body.data[0].id).toBe(id);

    // Renamed once it has ended too: the name is not part of its execution.
    await waitFor(
      async () => (await h.call('GET', `/v1/evaluation/runs/${id}`)).body.status === 'completed',
      60_000,
      'the named run to complete',
    );
    const renamed = await h.call('PATCH', `/v1/evaluation/runs/${id}`, {
      body: { name: 'nightly, renamed' },
    });
    expect(renamed.status, renamed.text).toBe(200);
    expect(renamed.body).toMatchObject({ id, name: 'nightly, renamed', status: 'completed' });
    expect((await h.call('GET', `/v1/evaluation/runs/${id}`)).body.name).toBe('nightly, renamed');
    const unnamed = await h.call('PATCH', `/v1/evaluation/runs/${id}`, { body: { name: null } });
    expect(unnamed.status).toBe(200);
    expect(unnamed.body.name).toBeNull();
  });

  it('refuses a blank or overlong name and unknown fields with a 422 naming the field', async () => {
    for (const name of ['', '   ', 'x'.repeat(201)]) {
      const res = await h.call('POST', '/v1/evaluation/runs', { body: body({ name }) });
      expect(res.status, JSON.stringify(res.body)).toBe(422);
      expect(res.body.detail.map((d: { loc: string[] }) => d.loc.join('.'))).toContain('body.name');
    }
    const run = (await h.call('POST', '/v1/evaluation/runs', { body: body() })).body;
    const patches: [unknown, string][] = [
      [{ name: '' }, 'body.name'],
      [{ name: 5 }, 'body.name'],
      [{}, 'body.name'],
      [{ name: 'ok', status: 'completed' }, 'body.status'],
    ];
    for (const [patch, loc] of patches) {
      const res = await h.call('PATCH', `/v1/evaluation/runs/${run.id}`, { body: patch });
      expect(res.status, JSON.stringify(res.body)).toBe(422);
      expect(res.body.detail.map((d: { loc: string[] }) => d.loc.join('.'))).toContain(loc);
    }
    const notJson = await h.call('PATCH', `/v1/evaluation/runs/${run.id}`, {
      raw: 'name=x',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
    });
    expect(notJson.status).toBe(415);
  });

  it('answers 404 for an unknown run or another project’s, 401 for a wrong key, 403 without evaluation:write', async () => {
    const run = (await h.call('POST', '/v1/evaluation/runs', { body: body({ name: 'mine' }) })).body;
    const unknown = await h.call('PATCH', '/v1/evaluation/runs/run_missing', { body: { name: 'x' } });
    expect(unknown.status).toBe(404);
    const stranger = await h.key(['*'], 'other-names');
    const theirs = await h.call('PATCH', `/v1/evaluation/runs/${run.id}`, {
      key: stranger.key,
      body: { name: 'stolen' },
    });
    expect(theirs.status).toBe(404);
    expect((await h.call('GET', '/v1/evaluation/runs?name=mine', { key: stranger.key })).body.total).toBe(0);
    const wrong = await h.call('PATCH', `/v1/evaluation/runs/${run.id}`, {
      key: 'eg_wrong',
      body: { name: 'x' },
    });
    expect(wrong.status).toBe(401);
    const reader = await h.key(['evaluation:read']);
    const denied = await h.call('PATCH', `/v1/evaluation/runs/${run.id}`, {
      key: reader.key,
      body: { name: 'x' },
    });
    expect(denied.status).toBe(403);
    expect((await h.call('GET', `/v1/evaluation/runs/${run.id}`)).body.name).toBe('mine');
  });

  it('the TypeScript client names, lists by name and renames', async () => {
    const client = clientOf(h);
    const run = await client.runs.create({
      container: 'named-app',
      evaluators: ['ok'],
      sample: { type: 'dataset', dataset: 'tiny' },
      name: 'from the client',
    });
    expect(run.name).toBe('from the client');
    const page = await client.runs.list({ name: 'from the client' });
    expect(page.data.map((r) => r.id)).toEqual([run.id]);
    expect((await client.runs.update(run.id, { name: 'renamed by client' })).name).toBe('renamed by client');
    expect((await client.runs.update(run.id, { name: null })).name).toBeNull();
  });

  it.skipIf(testDbKind() === 'postgres')(
    'the CLI names with --name, shows a name column, filters and renames',
    async () => {
      const made = await evalgate(h, [
        ...['runs', 'create', '--container', 'named-app', '--evaluator', 'ok', '--dataset', 'tiny'],
        ...['--name', 'cli nightly', '--json'],
      ]);
      expect(made.code, made.stderr).toBe(0);
      const run = JSON.parse(made.stdout);
      expect(run.name).toBe('cli nightly');
      const list = await evalgate(h, ['runs', 'list', '--name', 'cli nightly']);
      expect(list.code, list.stderr).toBe(0);
      expect(list.stdout).toMatch(/\bid\s*│\s*name\s*│\s*status\b/);
      const row = list.stdout.split('\n').find((line) => line.includes(run.id));
      expect(row).toContain('cli nightly');
      const get = await evalgate(h, ['runs', 'get', run.id]);
      expect(get.stdout).toMatch(/name\s*│\s*cli nightly/);
      const renamed = await evalgate(h, ['runs', 'rename', run.id, 'cli renamed']);
      expect(renamed.code, renamed.stderr).toBe(0);
      expect(renamed.stdout).toContain(`Run ${run.id} is named "cli renamed"`);
      const cleared = await evalgate(h, ['runs', 'rename', run.id, '--json']);
      expect(JSON.parse(cleared.stdout).name).toBeNull();
    },
  );
});
