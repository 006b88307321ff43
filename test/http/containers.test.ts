import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Harness, registerStubModel, startHarness } from '../helpers/harness.js';

let h: Harness;
beforeAll(async () => {
  h = await startHarness();
  await registerStubModel(h, 'm');
});
afterAll(async () => {
  await h.close();
});

describe('containers', () => {
  it('creates, reads by id and label, lists, patches and deletes', async () => {
    const created = await h.call('POST', '/v1/containers', {
      body: { label: 'support-bot', description: 'Support', metadata: { team: 'a' } },
    });
    expect(created.status).toBe(201);
    expect(created.body).toMatchObject({
      object: 'container',
      label: 'support-bot',
      description: 'Support',
      metadata: { team: 'a' },
    });
    expect(created.body.id).toMatch(/^ctr_/);

    const byLabel = await h.call('GET', '/v1/containers/support-bot');
    expect(byLabel.status).toBe(200);
    expect(byLabel.body.id).toBe(created.body.id);
    const byId = await h.call('GET', `/v1/containers/${created.body.id}`);
    expect(byId.body.label).toBe('support-bot');

    const patched = await h.call('PATCH', '/v1/containers/support-bot', {
      body: { description: null, label: 'support' },
    });
    expect(patched.status).toBe(200);
    expect(patched.body).toMatchObject({ label: 'support', description: null });

    const list = await h.call('GET', '/v1/containers?limit=1');
    expect(list.body.total).toBeGreaterThanOrEqual(1);
    expect(list.body.data).toHaveLength(1);

    const del = await h.call('DELETE', `/v1/containers/${created.body.id}`);
    expect(del.body).toEqual({ object: 'container', id: created.body.id, deleted: true });
    expect((await h.call('GET', `/v1/containers/${created.body.id}`)).status).toBe(404);
  });

  it('answers 409 on a label clash and while evaluators reference the container', async () => {
    await h.call('POST', '/v1/containers', { body: { label: 'dup' } });
    const clash = await h.call('POST', '/v1/containers', { body: { label: 'dup' } });
    expect(clash.status).toBe(409);
    expect(clash.body.error.code).toBe('conflict');

    const c = await h.call('POST', '/v1/containers', { body: { label: 'used' } });
    await h.call('POST', '/v1/evaluators', {
      body: { type: 'judge', model: 'm', prompt: 'p', container: 'used' },
    });
    const del = await h.call('DELETE', `/v1/containers/${c.body.id}`);
    expect(del.status).toBe(409);
    expect(del.body.error.code).toBe('container_in_use');
  });
});

/** The 422 entries of a response, as `loc` paths joined by dots. */
function locs(res: { status: number; body: any }): string[] {
  expect(res.status).toBe(422);
  return res.body.detail.map((d: { loc: unknown[] }) => d.loc.join('.'));
}

describe('container errors and listing', () => {
  it('defaults description to null and metadata to {}; null metadata on patch empties it', async () => {
    const c = await h.call('POST', '/v1/containers', { body: { label: 'defaults', metadata: { a: 1 } } });
    expect(c.body).toMatchObject({ description: null, metadata: { a: 1 }, project_id: h.admin.projectId });
    const p = await h.call('PATCH', `/v1/containers/${c.body.id}`, { body: { metadata: null } });
    expect(p.body.metadata).toEqual({});
    expect(p.body.label).toBe('defaults');
  });

  it('answers 422 for missing or malformed labels and unknown properties', async () => {
    expect(locs(await h.call('POST', '/v1/containers', { body: {} }))).toEqual(['body.label']);
    for (const label of ['ctr_x', 'has space', '', '-lead', 'x'.repeat(129)]) {
      expect(locs(await h.call('POST', '/v1/containers', { body: { label } })), label).toEqual([
        'body.label',
      ]);
    }
    const many = await h.call('POST', '/v1/containers', {
      body: { label: 5, description: 3, metadata: [], colour: 'red' },
    });
    expect(locs(many).sort()).toEqual(['body.colour', 'body.description', 'body.label', 'body.metadata']);
    const c = await h.call('POST', '/v1/containers', { body: { label: 'strict' } });
    expect(locs(await h.call('PATCH', '/v1/containers/strict', { body: { id: 'ctr_x' } }))).toEqual([
      'body.id',
    ]);
    expect(locs(await h.call('PATCH', '/v1/containers/strict', { body: { label: null } }))).toEqual([
      'body.label',
    ]);
    expect((await h.call('GET', `/v1/containers/${c.body.id}`)).body).toEqual(c.body);
  });

  it('answers 404 for unknown containers; delete takes an id, not a label', async () => {
    for (const [method, path, body] of [
      ['GET', '/v1/containers/missing', undefined],
      ['PATCH', '/v1/containers/missing', { description: 'x' }],
      ['DELETE', '/v1/containers/ctr_00000000000000000000000000', undefined],
    ] as const) {
      const res = await h.call(method, path, { body });
      expect(res.status).toBe(404);
      expect(res.body.error.code).toBe('not_found');
    }
    await h.call('POST', '/v1/containers', { body: { label: 'by-label' } });
    expect((await h.call('DELETE', '/v1/containers/by-label')).status).toBe(404);
    expect((await h.call('GET', '/v1/containers/by-label')).status).toBe(200);
  });

  it('answers 409 on a rename to a taken label, and frees a container once its evaluators are gone', async () => {
    await h.call('POST', '/v1/containers', { body: { label: 'first' } });
    await h.call('POST', '/v1/containers', { body: { label: 'second' } });
    const clash = await h.call('PATCH', '/v1/containers/second', { body: { label: 'first' } });
    expect(clash.status).toBe(409);
    expect(clash.body.error.code).toBe('conflict');

    const c = (await h.call('POST', '/v1/containers', { body: { label: 'busy' } })).body;
    const e = (
      await h.call('POST', '/v1/evaluators', {
        body: { type: 'judge', model: 'm', prompt: 'p', container: 'busy' },
      })
    ).body;
    expect((await h.call('DELETE', `/v1/containers/${c.id}`)).status).toBe(409);
    await h.call('DELETE', `/v1/evaluators/${e.id}`);
    expect((await h.call('DELETE', `/v1/containers/${c.id}`)).body).toEqual({
      object: 'container',
      id: c.id,
      deleted: true,
    });
  });

  it('lists newest first with limit, offset and total, and validates both', async () => {
    const { key } = await h.key(['containers:read', 'containers:write'], 'container-listing');
    const ids: string[] = [];
    for (let i = 0; i < 22; i++)
      ids.push((await h.call('POST', '/v1/containers', { key, body: { label: `c${i}` } })).body.id);
    const newestFirst = ids.reverse();
    const first = await h.call('GET', '/v1/containers', { key });
    expect(first.body.total).toBe(22);
    expect(first.body.data.map((c: { id: string }) => c.id)).toEqual(newestFirst.slice(0, 20));
    const page = await h.call('GET', '/v1/containers?limit=3&offset=19', { key });
    expect(page.body).toMatchObject({ object: 'list', total: 22 });
    expect(page.body.data.map((c: { id: string }) => c.id)).toEqual(newestFirst.slice(19));
    for (const [query, loc] of [
      ['limit=0', 'query.limit'],
      ['limit=101', 'query.limit'],
      ['offset=-1', 'query.offset'],
      ['offset=x', 'query.offset'],
    ]) {
      expect(locs(await h.call('GET', `/v1/containers?${query}`, { key })), query).toEqual([loc]);
    }
  });
});
