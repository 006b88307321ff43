import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Harness, startHarness } from '../helpers/harness.js';

let h: Harness;
beforeAll(async () => {
  h = await startHarness();
});
afterAll(async () => {
  await h.close();
});

function locs(res: { status: number; body: any }): string[] {
  expect(res.status).toBe(422);
  return res.body.detail.map((d: { loc: unknown[] }) => d.loc.join('.'));
}

describe('API keys', () => {
  it('creates a key shown once, which then works with exactly its permissions', async () => {
    const res = await h.call('POST', '/v1/api-keys', {
      body: { name: 'reader', permissions: ['evaluators:read'] },
    });
    expect(res.status).toBe(201);
    const k = res.body;
    expect(k.key).toMatch(/^eg_[0-9A-Za-z]{43}$/);
    expect(k).toMatchObject({
      object: 'api_key',
      project_id: h.admin.projectId,
      name: 'reader',
      prefix: k.key.slice(0, 10),
      permissions: ['evaluators:read'],
      created_by: h.admin.id,
      last_used_at: null,
      revoked_at: null,
    });
    expect(k.id).toMatch(/^key_/);
    expect((await h.call('GET', '/v1/evaluators', { key: k.key })).status).toBe(200);
    const denied = await h.call('POST', '/v1/evaluators', {
      key: k.key,
      body: { type: 'judge', model: 'm', prompt: 'p' },
    });
    expect(denied.status).toBe(403);
    expect(denied.body.error.code).toBe('permission_denied');
  });

  it("defaults to the creating key's permissions and never grants more than it holds", async () => {
    const limited = await h.key(['keys:write', 'evaluators:*']);
    const inherit = await h.call('POST', '/v1/api-keys', { key: limited.key, body: { name: 'child' } });
    expect(inherit.status).toBe(201);
    expect(inherit.body.permissions).toEqual(['keys:write', 'evaluators:*']);
    const narrower = await h.call('POST', '/v1/api-keys', {
      key: limited.key,
      body: { name: 'narrow', permissions: ['evaluators:read'] },
    });
    expect(narrower.status).toBe(201);
    for (const permissions of [['*'], ['containers:read'], ['*:read'], ['evaluators:read', 'keys:read']]) {
      const res = await h.call('POST', '/v1/api-keys', {
        key: limited.key,
        body: { name: 'wider', permissions },
      });
      expect(res.status, permissions.join()).toBe(403);
      expect(res.body.error.code).toBe('permission_denied');
    }
  });

  it('answers 422 for malformed permissions and bodies', async () => {
    const bad = await h.call('POST', '/v1/api-keys', {
      body: { name: 'x', permissions: ['evaluators:read', 'evaluators', 'widgets:read', 'keys:delete'] },
    });
    expect(locs(bad)).toEqual(['body.permissions.1', 'body.permissions.2', 'body.permissions.3']);
    expect(bad.body.detail[1].msg).toMatch(/widgets/);
    expect(bad.body.detail[2].msg).toMatch(/delete/);
    expect(locs(await h.call('POST', '/v1/api-keys', { body: {} }))).toEqual(['body.name']);
    expect(locs(await h.call('POST', '/v1/api-keys', { body: { name: 'x', permissions: [] } }))).toEqual([
      'body.permissions',
    ]);
    expect(locs(await h.call('POST', '/v1/api-keys', { body: { name: 'x', hash: 'abc' } }))).toEqual([
      'body.hash',
    ]);
  });

  it('lists the keys of the project, newest first, never with their secret', async () => {
    const { key } = await h.key(['keys:*'], 'key-listing');
    const made: string[] = [];
    for (let i = 0; i < 3; i++)
      made.push((await h.call('POST', '/v1/api-keys', { key, body: { name: `k${i}` } })).body.id);
    const list = await h.call('GET', '/v1/api-keys', { key });
    expect(list.status).toBe(200);
    expect(list.body.total).toBe(4);
    expect(list.body.data.slice(0, 3).map((k: { id: string }) => k.id)).toEqual(made.reverse());
    for (const k of list.body.data) {
      expect(k).not.toHaveProperty('key');
      expect(k).not.toHaveProperty('hash');
    }
    expect(list.text).not.toMatch(/eg_[0-9A-Za-z]{43}/);
    const page = await h.call('GET', '/v1/api-keys?limit=1&offset=1', { key });
    expect(page.body.data.map((k: { id: string }) => k.id)).toEqual([made[1]]);
    expect(locs(await h.call('GET', '/v1/api-keys?limit=0', { key }))).toEqual(['query.limit']);
  });

  it('revokes a key: it stops working at once; revoking again is harmless; unknown ids are 404', async () => {
    const victim = await h.key(['evaluators:read']);
    expect((await h.call('GET', '/v1/evaluators', { key: victim.key })).status).toBe(200);
    const del = await h.call('DELETE', `/v1/api-keys/${victim.id}`);
    expect(del.status).toBe(200);
    expect(del.body).toMatchObject({ id: victim.id, object: 'api_key' });
    expect(del.body.revoked_at).toEqual(expect.any(String));
    const after = await h.call('GET', '/v1/evaluators', { key: victim.key });
    expect(after.status).toBe(401);
    expect(after.body.error.code).toBe('invalid_api_key');
    const again = await h.call('DELETE', `/v1/api-keys/${victim.id}`);
    expect(again.body.revoked_at).toBe(del.body.revoked_at);
    const missing = await h.call('DELETE', '/v1/api-keys/key_00000000000000000000000000');
    expect(missing.status).toBe(404);
    expect(missing.body.error.code).toBe('not_found');
  });

  it('needs keys:write to create or revoke and keys:read to list', async () => {
    const reader = await h.key(['keys:read']);
    expect((await h.call('GET', '/v1/api-keys', { key: reader.key })).status).toBe(200);
    expect((await h.call('POST', '/v1/api-keys', { key: reader.key, body: { name: 'x' } })).status).toBe(403);
    expect((await h.call('DELETE', `/v1/api-keys/${reader.id}`, { key: reader.key })).status).toBe(403);
    const writer = await h.key(['keys:write']);
    expect((await h.call('GET', '/v1/api-keys', { key: writer.key })).status).toBe(403);
  });
});
