import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Harness, startHarness } from '../helpers/harness.js';

/* `/v1/prompts`: versions, labels, diffs and rollbacks, within a project, behind prompts:read/write. */

let h: Harness;
beforeAll(async () => {
  h = await startHarness();
});
afterAll(async () => {
  await h.close();
});

const first = {
  name: 'greeter',
  description: 'Says hello',
  messages: [
    { role: 'system', content: 'You greet {{name}}.\nBe kind.' },
    { role: 'user', content: 'Hello, I am {{name}} and I am {{age}}.' },
  ],
  variables: { age: 'number' },
  model: 'openai/gpt-4o-mini',
  parameters: { temperature: 0.1, stop: ['END'] },
  commit_message: 'first draft',
  labels: ['production'],
};

async function ok<T = any>(res: Promise<{ status: number; text: string; body: T }>, status = 200) {
  const r = await res;
  expect(r.status, r.text).toBe(status);
  return r.body;
}

describe('prompts', () => {
  it('creates a prompt with its first version, author, labels and declared variables', async () => {
    const p = await ok(h.call('POST', '/v1/prompts', { body: first }), 201);
    expect(p.id).toMatch(/^prm_/);
    expect(p).toMatchObject({ object: 'prompt', name: 'greeter', latest_version: 1 });
    expect(p.labels).toEqual({ production: 1, latest: 1 });
    expect(p.version).toMatchObject({
      object: 'prompt.version',
      version: 1,
      model: 'openai/gpt-4o-mini',
      commit_message: 'first draft',
      author: `key:${h.admin.id}`,
      variables: { age: 'number', name: 'string' },
    });
    expect(p.version.labels.sort()).toEqual(['latest', 'production']);

    const again = await h.call('POST', '/v1/prompts', { body: first });
    expect(again.status).toBe(409);
    expect(again.body.error.code).toBe('conflict');
  });

  it('adds immutable versions and reads a prompt by name, id, label or version', async () => {
    const v2 = await ok(
      h.call('POST', '/v1/prompts/greeter/versions', {
        body: {
          messages: [
            { role: 'system', content: 'You greet {{name}} warmly.\nBe kind.' },
            { role: 'user', content: 'Hello, I am {{name}}.' },
            { role: 'assistant', content: 'Welcome!' },
          ],
          model: 'openai/gpt-4o',
          parameters: { temperature: 0.5 },
          commit_message: 'warmer',
          labels: ['staging'],
        },
      }),
      201,
    );
    expect(v2).toMatchObject({ version: 2, commit_message: 'warmer' });
    expect(v2.labels.sort()).toEqual(['latest', 'staging']);

    const latest = await ok(h.call('GET', '/v1/prompts/greeter'));
    expect(latest.version.version).toBe(2);
    const byId = await ok(h.call('GET', `/v1/prompts/${latest.id}?label=production`));
    expect(byId.version.version).toBe(1);
    const byVersion = await ok(h.call('GET', '/v1/prompts/greeter?version=1'));
    expect(byVersion.version.messages[0].content).toBe('You greet {{name}}.\nBe kind.');
    const one = await ok(h.call('GET', '/v1/prompts/greeter/versions/2'));
    expect(one.model).toBe('openai/gpt-4o');

    const versions = await ok(h.call('GET', '/v1/prompts/greeter/versions'));
    expect(versions.total).toBe(2);
    expect(versions.data.map((v: any) => v.version)).toEqual([2, 1]);
    const list = await ok(h.call('GET', '/v1/prompts?name=greet'));
    expect(list.total).toBe(1);
    expect(list.data[0].labels).toEqual({ production: 1, staging: 2, latest: 2 });
  });

  it('diffs two versions: messages as unified diffs, model, parameters and variables', async () => {
    const d = await ok(h.call('GET', '/v1/prompts/greeter/diff?from=1&to=2'));
    expect(d.changed).toBe(true);
    expect(d.messages.map((m: any) => m.status)).toEqual(['changed', 'changed', 'added']);
    expect(d.messages[0].patch).toContain('-You greet {{name}}.');
    expect(d.messages[0].patch).toContain('+You greet {{name}} warmly.');
    expect(d.messages[0].patch).toContain(' Be kind.');
    expect(d.model).toEqual({ old: 'openai/gpt-4o-mini', new: 'openai/gpt-4o' });
    expect(d.parameters).toEqual({ temperature: { old: 0.1, new: 0.5 }, stop: { old: ['END'], new: null } });
    expect(d.variables).toEqual({ age: { old: 'number', new: null } });
    const same = await ok(h.call('GET', '/v1/prompts/greeter/diff?from=2&to=2'));
    expect(same.changed).toBe(false);
    expect((await h.call('GET', '/v1/prompts/greeter/diff?from=1&to=9')).status).toBe(404);
  });

  it('moves labels, rolls them back through their history, and deletes them', async () => {
    await ok(
      h.call('POST', '/v1/prompts/greeter/versions', {
        body: { messages: [{ role: 'user', content: 'v3' }] },
      }),
      201,
    );
    const m1 = await ok(h.call('PUT', '/v1/prompts/greeter/labels/production', { body: { version: 2 } }));
    expect(m1).toMatchObject({ name: 'production', version: 2, previous_version: 1 });
    await ok(h.call('PUT', '/v1/prompts/greeter/labels/production', { body: { version: 3 } }));

    const back1 = await ok(h.call('POST', '/v1/prompts/greeter/labels/production/rollback'));
    expect(back1).toMatchObject({ version: 2, previous_version: 3 });
    const back2 = await ok(h.call('POST', '/v1/prompts/greeter/labels/production/rollback'));
    expect(back2).toMatchObject({ version: 1, previous_version: 2 });
    // The label's first move created it: there is nothing before it.
    const none = await h.call('POST', '/v1/prompts/greeter/labels/production/rollback');
    expect(none.status).toBe(409);
    expect((await ok(h.call('GET', '/v1/prompts/greeter?label=production'))).version.version).toBe(1);

    const labels = await ok(h.call('GET', '/v1/prompts/greeter/labels'));
    const production = labels.data.find((l: any) => l.name === 'production');
    expect(production.history.map((m: any) => [m.action, m.from_version, m.to_version, m.reverted])).toEqual([
      ['rollback', 2, 1, false],
      ['rollback', 3, 2, false],
      ['move', 2, 3, true],
      ['move', 1, 2, true],
      ['move', null, 1, false],
    ]);

    await ok(h.call('PUT', '/v1/prompts/greeter/labels/canary', { body: { version: 3 } }));
    const deleted = await ok(h.call('DELETE', '/v1/prompts/greeter/labels/canary'));
    expect(deleted).toEqual({
      object: 'prompt.label',
      prompt_id: expect.any(String),
      name: 'canary',
      deleted: true,
    });
    expect((await h.call('GET', '/v1/prompts/greeter?label=canary')).status).toBe(404);
    expect((await h.call('DELETE', '/v1/prompts/greeter/labels/canary')).status).toBe(404);
  });

  it('answers bad input with a clear 4xx', async () => {
    const expectStatus = async (p: Promise<{ status: number; text: string }>, status: number) => {
      const r = await p;
      expect(r.status, r.text).toBe(status);
      return r;
    };
    await expectStatus(h.call('GET', '/v1/prompts/greeter?version=99'), 404);
    await expectStatus(h.call('GET', '/v1/prompts/greeter?label=nope'), 404);
    await expectStatus(h.call('GET', '/v1/prompts/greeter?label=production&version=1'), 422);
    await expectStatus(h.call('GET', '/v1/prompts/greeter?label=Not%20Safe'), 422);
    await expectStatus(h.call('GET', '/v1/prompts/no-such'), 404);
    await expectStatus(h.call('PUT', '/v1/prompts/greeter/labels/latest', { body: { version: 1 } }), 400);
    await expectStatus(h.call('PUT', '/v1/prompts/greeter/labels/production', { body: { version: 0 } }), 422);
    await expectStatus(h.call('PUT', '/v1/prompts/greeter/labels/BAD!', { body: { version: 1 } }), 422);
    await expectStatus(h.call('POST', '/v1/prompts/greeter/labels/never/rollback'), 404);
    await expectStatus(
      h.call('POST', '/v1/prompts', {
        body: { ...first, name: 'broken', messages: [{ role: 'user', content: 'Hi {{ 1x }}' }] },
      }),
      422,
    );
    await expectStatus(
      h.call('POST', '/v1/prompts', { body: { ...first, name: 'b2', variables: { x: 'date' } } }),
      422,
    );
    await expectStatus(
      h.call('POST', '/v1/prompts', { body: { ...first, name: 'b3', labels: ['latest'] } }),
      422,
    );
    await expectStatus(h.call('POST', '/v1/prompts', { body: { ...first, name: 'b4', messages: [] } }), 422);
    await expectStatus(
      h.call('POST', '/v1/prompts', {
        body: { ...first, name: 'b5', messages: [{ role: 'robot', content: 'x' }] },
      }),
      422,
    );
    await expectStatus(
      h.call('POST', '/v1/prompts/greeter/versions', {
        body: { messages: [{ role: 'user', content: 'x' }], extra: 1 },
      }),
      422,
    );

    // A version only another prompt has: the label stays where it was.
    await ok(
      h.call('POST', '/v1/prompts', { body: { name: 'other', messages: [{ role: 'user', content: 'x' }] } }),
      201,
    );
    for (let i = 0; i < 4; i++) {
      await ok(
        h.call('POST', '/v1/prompts/greeter/versions', {
          body: { messages: [{ role: 'user', content: `v${i}` }] },
        }),
        201,
      );
    }
    const before = (await ok(h.call('GET', '/v1/prompts/other/labels'))).data;
    await expectStatus(h.call('PUT', '/v1/prompts/other/labels/production', { body: { version: 5 } }), 404);
    expect((await ok(h.call('GET', '/v1/prompts/other/labels'))).data).toEqual(before);
  });

  it("keeps a project's prompts from another project's key", async () => {
    const other = await h.key(['*'], 'elsewhere');
    const id = (await ok(h.call('GET', '/v1/prompts/greeter'))).id;
    for (const path of [
      '/v1/prompts/greeter',
      `/v1/prompts/${id}`,
      `/v1/prompts/${id}/versions`,
      `/v1/prompts/${id}/versions/1`,
      `/v1/prompts/${id}/labels`,
      `/v1/prompts/${id}/diff?from=1&to=2`,
    ]) {
      expect((await h.call('GET', path, { key: other.key })).status, path).toBe(404);
    }
    expect(
      (await h.call('PUT', `/v1/prompts/${id}/labels/production`, { key: other.key, body: { version: 2 } }))
        .status,
    ).toBe(404);
    expect(
      (await h.call('POST', `/v1/prompts/${id}/labels/production/rollback`, { key: other.key })).status,
    ).toBe(404);
    expect((await h.call('DELETE', `/v1/prompts/${id}/labels/production`, { key: other.key })).status).toBe(
      404,
    );
    expect(
      (
        await h.call('POST', `/v1/prompts/${id}/versions`, {
          key: other.key,
          body: { messages: [{ role: 'user', content: 'x' }] },
        })
      ).status,
    ).toBe(404);
    const theirs = await ok(h.call('GET', '/v1/prompts', { key: other.key }));
    expect(theirs.total).toBe(0);
    // The same name is free in another project.
    await ok(h.call('POST', '/v1/prompts', { key: other.key, body: first }), 201);
    expect((await ok(h.call('GET', '/v1/prompts/greeter?label=production'))).version.version).toBe(1);
  });

  it('needs prompts:read to read and prompts:write to change', async () => {
    const reader = await h.key(['prompts:read']);
    const stranger = await h.key(['logs:read', 'evaluators:*']);
    expect((await h.call('GET', '/v1/prompts/greeter', { key: reader.key })).status).toBe(200);
    const denied = await h.call('PUT', '/v1/prompts/greeter/labels/production', {
      key: reader.key,
      body: { version: 2 },
    });
    expect(denied.status).toBe(403);
    expect(denied.body.error.code).toBe('permission_denied');
    expect(
      (await h.call('POST', '/v1/prompts', { key: reader.key, body: { ...first, name: 'x' } })).status,
    ).toBe(403);
    expect((await h.call('GET', '/v1/prompts', { key: stranger.key })).status).toBe(403);
    const writer = await h.key(['prompts:write']);
    expect(
      (await h.call('POST', '/v1/prompts/greeter/labels/production/rollback', { key: writer.key })).status,
    ).toBe(409);
    const badKey = await h.call('POST', '/v1/api-keys', {
      body: { name: 'k', permissions: ['prompts:delete'] },
    });
    expect(badKey.status).toBe(422);
  });
});
