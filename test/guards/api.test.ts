import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Harness, registerStubModel, startHarness } from '../helpers/harness.js';

/*
 * `/v1/guards`: policies created, listed, read, changed and deleted; every invalid check answered 422 at
 * its place; another project's key sees nothing and cannot name this project's evaluators or containers.
 */

let h: Harness;
beforeAll(async () => {
  h = await startHarness();
  await registerStubModel(h, 'judge');
  const ev = await h.call('POST', '/v1/evaluators', {
    body: { type: 'judge', name: 'polite', model: 'judge', prompt: 'Rate {{output}}', pass_threshold: 0.5 },
  });
  expect(ev.status).toBe(201);
  expect((await h.call('POST', '/v1/containers', { body: { label: 'support' } })).status).toBe(201);
});
afterAll(async () => {
  await h.close();
});

const policy = {
  name: 'default',
  description: 'personal data out, secrets blocked',
  applies_to: { containers: ['support'], models: ['gpt-4o-mini'] },
  checks: [
    { name: 'pii', guard: { type: 'pii' }, action: 'redact' },
    { name: 'secrets', guard: { type: 'secrets' }, stage: 'output', on_error: 'closed' },
    { name: 'judge', guard: { type: 'evaluator', evaluator: 'polite' }, stage: 'output', action: 'flag' },
  ],
};

describe('guard policies', () => {
  it('creates a policy with its defaults filled in, lists, reads, changes and deletes it', async () => {
    const created = await h.call('POST', '/v1/guards', { body: policy });
    expect(created.status).toBe(201);
    const p = created.body;
    expect(p.id).toMatch(/^grd_/);
    expect(p.object).toBe('guard_policy');
    expect(p.enabled).toBe(true);
    expect(p.applies_to.containers[0]).toMatch(/^ctr_/);
    expect(p.applies_to).toMatchObject({ keys: [], models: ['gpt-4o-mini'] });
    expect(p.checks[0]).toEqual({
      name: 'pii',
      guard: { type: 'pii' },
      stage: 'input',
      action: 'redact',
      timeout_ms: 1000,
      on_error: 'open',
      streaming: 'incremental',
    });
    expect(p.checks[2]).toMatchObject({
      stage: 'output',
      action: 'flag',
      streaming: 'hold',
      timeout_ms: 30000,
    });

    expect((await h.call('POST', '/v1/guards', { body: policy })).status).toBe(409);
    const list = await h.call('GET', '/v1/guards');
    expect(list.body).toMatchObject({ object: 'list', total: 1 });
    expect((await h.call('GET', '/v1/guards/default')).body.id).toBe(p.id);
    expect((await h.call('GET', `/v1/guards/${p.id}`)).body.name).toBe('default');

    const patched = await h.call('PATCH', '/v1/guards/default', {
      body: { enabled: false, name: 'renamed' },
    });
    expect(patched.status).toBe(200);
    expect(patched.body).toMatchObject({ enabled: false, name: 'renamed' });
    expect((await h.call('GET', '/v1/guards/default')).status).toBe(404);

    const deleted = await h.call('DELETE', '/v1/guards/renamed');
    expect(deleted.body).toEqual({ id: p.id, object: 'guard_policy', deleted: true });
    expect((await h.call('DELETE', '/v1/guards/renamed')).status).toBe(404);
  });

  it('answers 422 at the place of each problem', async () => {
    const res = await h.call('POST', '/v1/guards', {
      body: {
        name: 'bad',
        applies_to: { containers: ['nope'], keys: ['key_nope'] },
        checks: [
          { name: 'r', guard: { type: 'regex', pattern: '(a' } },
          { name: 'j', guard: { type: 'json_schema', schema: { type: 'object' } }, stage: 'input' },
          { name: 'x', guard: { type: 'prompt_injection' }, action: 'redact' },
          { name: 'e', guard: { type: 'evaluator', evaluator: 'missing' } },
          { name: 'p', guard: { type: 'pii' }, stage: 'parallel', action: 'redact' },
        ],
      },
    });
    expect(res.status).toBe(422);
    const locs = res.body.detail.map((d: any) => d.loc.join('.'));
    expect(locs).toEqual(
      expect.arrayContaining([
        'body.checks.0.guard.pattern',
        'body.checks.1.stage',
        'body.checks.2.action',
        'body.checks.3.guard.evaluator',
        'body.checks.4.action',
      ]),
    );
    const where = await h.call('POST', '/v1/guards', {
      body: {
        name: 'bad',
        applies_to: { containers: ['nope'], keys: ['key_nope'] },
        checks: [policy.checks[0]],
      },
    });
    expect(where.status).toBe(422);
    expect(where.body.detail.map((d: any) => d.loc.join('.'))).toEqual([
      'body.applies_to.containers.0',
      'body.applies_to.keys.0',
    ]);
  });

  it('refuses unknown guard types, bad stages and empty check lists by schema', async () => {
    for (const body of [
      { name: 'x', checks: [] },
      { name: 'x', checks: [{ name: 'a', guard: { type: 'magic' } }] },
      { name: 'x', checks: [{ name: 'a', guard: { type: 'pii' }, stage: 'later' }] },
      { name: 'bad name!', checks: [{ name: 'a', guard: { type: 'pii' } }] },
    ]) {
      expect((await h.call('POST', '/v1/guards', { body })).status).toBe(422);
    }
  });

  it("another project's key sees no policy and cannot name this project's evaluator or container", async () => {
    const created = await h.call('POST', '/v1/guards', { body: { ...policy, name: 'mine', applies_to: {} } });
    expect(created.status).toBe(201);
    const other = await h.key(['*'], 'other');
    expect((await h.call('GET', '/v1/guards', { key: other.key })).body.total).toBe(0);
    expect((await h.call('GET', '/v1/guards/mine', { key: other.key })).status).toBe(404);
    expect((await h.call('GET', `/v1/guards/${created.body.id}`, { key: other.key })).status).toBe(404);
    expect((await h.call('DELETE', '/v1/guards/mine', { key: other.key })).status).toBe(404);
    const theirs = await h.call('POST', '/v1/guards', {
      key: other.key,
      body: { name: 'theirs', checks: [{ name: 'j', guard: { type: 'evaluator', evaluator: 'polite' } }] },
    });
    expect(theirs.status).toBe(422);
    expect(theirs.body.detail[0].msg).toContain("evaluator 'polite' not found in this project");
    const container = await h.call('POST', '/v1/guards', {
      key: other.key,
      body: { name: 'theirs', applies_to: { containers: ['support'] }, checks: [policy.checks[0]] },
    });
    expect(container.status).toBe(422);
  });

  it('asks guards:read to read and guards:write to change', async () => {
    const reader = await h.key(['guards:read']);
    expect((await h.call('GET', '/v1/guards', { key: reader.key })).status).toBe(200);
    const denied = await h.call('POST', '/v1/guards', { key: reader.key, body: { ...policy, name: 'n' } });
    expect(denied.status).toBe(403);
    const none = await h.key(['models:read']);
    expect((await h.call('GET', '/v1/guards', { key: none.key })).status).toBe(403);
    expect((await h.call('GET', '/v1/guards/verdicts', { key: reader.key })).status).toBe(200);
  });
});
