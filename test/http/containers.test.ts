import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Harness, startHarness } from '../helpers/harness.js';

let h: Harness;
beforeAll(async () => {
  h = await startHarness();
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
