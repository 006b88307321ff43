import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { revokeKey } from '../../src/auth/key-store.js';
import { countContainerLogs, readContainerLogItems } from '../../src/catalog/logs/items.js';
import { newId } from '../../src/shared/ids.js';
import { type Harness, startHarness } from '../helpers/harness.js';

let h: Harness;
let container: { id: string; label: string };
beforeAll(async () => {
  h = await startHarness();
  container = (await h.call('POST', '/v1/containers', { body: { label: 'support' } })).body;
});
afterAll(async () => {
  await h.close();
});

const chat = (q: string, a: string) => ({
  model: 'openai/gpt-4o-mini',
  request: { model: 'gpt-4o-mini', messages: [{ role: 'user', content: q }] },
  response: {
    choices: [{ index: 0, message: { role: 'assistant', content: a } }],
    usage: { prompt_tokens: 5, completion_tokens: 2, total_tokens: 7 },
  },
});

const ndjson = { 'content-type': 'application/x-ndjson' };

describe('task logs', () => {
  it('imports a JSON array, deriving input, output, usage and status, and lists it in seq order', async () => {
    const res = await h.call('POST', '/v1/containers/support/logs', {
      body: [
        { ...chat('Hi?', 'Hello!'), latency_ms: 120, cost: 0.0001, metadata: { expected: 'Hello!' } },
        {
          model: 'acme-llm',
          input: [{ role: 'user', content: 'x' }],
          output: null,
          error: { code: 'upstream_unavailable', message: 'down' },
          created_at: '2025-01-02T03:04:05+01:00',
        },
        { model: 'acme-llm', input: 'plain', output: 'text', status: 'success' },
      ],
    });
    expect(res.status).toBe(201);
    expect(res.body).toEqual({
      object: 'task_log.import',
      container_id: container.id,
      imported: 3,
      first_seq: 1,
      last_seq: 3,
    });

    const list = await h.call('GET', `/v1/containers/${container.id}/logs`);
    expect(list.status).toBe(200);
    expect(list.body.total).toBe(3);
    expect(list.body.data.map((l: any) => l.seq)).toEqual([1, 2, 3]);
    const [first, second] = list.body.data;
    expect(first).toMatchObject({
      object: 'task_log',
      container_id: container.id,
      project_id: h.admin.projectId,
      model: 'openai/gpt-4o-mini',
      input: [{ role: 'user', content: 'Hi?' }],
      output: 'Hello!',
      usage: { prompt_tokens: 5, completion_tokens: 2, total_tokens: 7 },
      latency_ms: 120,
      cost: 0.0001,
      status: 'success',
      error: null,
      metadata: { expected: 'Hello!' },
    });
    expect(first.id).toMatch(/^log_/);
    expect(second).toMatchObject({
      status: 'error',
      error: { code: 'upstream_unavailable', message: 'down' },
      output: null,
      request: null,
      created_at: '2025-01-02T02:04:05.000Z',
    });

    const items = await readContainerLogItems(h.app.services.db, container.id, { start: 0, end: 2 });
    expect(items).toHaveLength(2);
    expect(items[0]).toMatchObject({
      id: first.id,
      input: [{ role: 'user', content: 'Hi?' }],
      output: 'Hello!',
      expected: 'Hello!',
      metadata: { expected: 'Hello!' },
    });
    expect(items[0]!.raw).toEqual(first);
    expect(items[1]!.expected).toBeNull();
    expect(await countContainerLogs(h.app.services.db, container.id)).toBe(3);
  });

  it('imports JSON lines after what is there, and filters by model, time and range', async () => {
    const rows = Array.from({ length: 6 }, (_, i) => ({
      ...chat(`q${i}`, `a${i}`),
      model: i % 2 ? 'model-b' : 'model-a',
      created_at: `2030-01-0${i + 1}T00:00:00Z`,
    }));
    const res = await h.call('POST', '/v1/containers/support/logs', {
      raw: `${rows.map((r) => JSON.stringify(r)).join('\n')}\n`,
      headers: ndjson,
    });
    expect(res.status).toBe(201);
    expect(res.body).toMatchObject({ imported: 6, first_seq: 4, last_seq: 9 });

    const byModel = await h.call('GET', '/v1/containers/support/logs?model=model-b');
    expect(byModel.body.total).toBe(3);
    expect(byModel.body.data.map((l: any) => l.output)).toEqual(['a1', 'a3', 'a5']);
    const since = await h.call('GET', '/v1/containers/support/logs?since=2030-01-05T00:00:00Z');
    expect(since.body.data.map((l: any) => l.seq)).toEqual([8, 9]);
    const range = await h.call('GET', '/v1/containers/support/logs?range=2:6&offset=1&limit=2');
    expect(range.body.total).toBe(4);
    expect(range.body.data.map((l: any) => l.seq)).toEqual([4, 5]);
    const filteredRange = await h.call('GET', '/v1/containers/support/logs?model=model-a&range=1:3');
    expect(filteredRange.body.data.map((l: any) => l.output)).toEqual(['a2', 'a4']);
    const items = await readContainerLogItems(h.app.services.db, container.id, { start: 3, end: 5 });
    expect(items.map((i) => i.output)).toEqual(['a0', 'a1']);
  });

  it('records what the gateway writes through the log writer, after the imports', async () => {
    const before = await countContainerLogs(h.app.services.db, container.id);
    for (let i = 0; i < 3; i++) {
      h.app.services.logWriter.write({
        id: newId('log'),
        projectId: h.admin.projectId,
        containerId: container.id,
        model: 'openai/gpt-4o',
        input: [{ role: 'user', content: `live ${i}` }],
        output: `answer ${i}`,
        request: { messages: [] },
        response: {},
        usage: null,
        latencyMs: 10,
        cost: 0,
        status: 'success',
        error: null,
        metadata: {},
        createdAt: new Date().toISOString(),
      });
    }
    await h.app.services.logWriter.flush();
    const list = await h.call('GET', `/v1/containers/support/logs?offset=${before}`);
    expect(list.body.data.map((l: any) => [l.seq, l.output])).toEqual([
      [before + 1, 'answer 0'],
      [before + 2, 'answer 1'],
      [before + 3, 'answer 2'],
    ]);
  });

  it('answers 422 naming bad lines, and stores nothing', async () => {
    const before = await countContainerLogs(h.app.services.db, container.id);
    const bad = await h.call('POST', '/v1/containers/support/logs', {
      raw: [
        JSON.stringify({ model: 'm' }),
        JSON.stringify({ output: 'no model' }),
        JSON.stringify({ model: 'm', cost: -1, extra: true }),
        '{broken',
      ].join('\n'),
      headers: ndjson,
    });
    expect(bad.status).toBe(422);
    expect(bad.body.detail.map((d: any) => d.loc)).toEqual([
      ['body', 'line', 2, 'model'],
      ['body', 'line', 3, 'extra'],
      ['body', 'line', 3, 'cost'],
      ['body', 'line', 4],
    ]);
    const json = await h.call('POST', '/v1/containers/support/logs', {
      body: [{ model: 'm' }, { model: '' }],
    });
    expect(json.status).toBe(422);
    expect(json.body.detail[0].loc).toEqual(['body', 1, 'model']);
    const notArray = await h.call('POST', '/v1/containers/support/logs', { body: { model: 'm' } });
    expect(notArray.status).toBe(422);
    expect(await countContainerLogs(h.app.services.db, container.id)).toBe(before);

    for (const q of ['range=3:1', 'range=a:b', 'since=yesterday', 'limit=0', 'model=']) {
      const res = await h.call('GET', `/v1/containers/support/logs?${q}`);
      expect(res.status, q).toBe(422);
      expect(res.body.detail[0].loc[0]).toBe('query');
    }
    const text = await h.call('POST', '/v1/containers/support/logs', {
      raw: 'x',
      headers: { 'content-type': 'text/plain' },
    });
    expect(text.status).toBe(415);
  });

  it('answers an empty import with nothing imported', async () => {
    const res = await h.call('POST', '/v1/containers/support/logs', { body: [] });
    expect(res.status).toBe(201);
    expect(res.body).toMatchObject({ imported: 0, first_seq: null, last_seq: null });
  });

  it('deletes the logs with their container', async () => {
    const c = await h.call('POST', '/v1/containers', { body: { label: 'short-lived' } });
    await h.call('POST', '/v1/containers/short-lived/logs', { body: [{ model: 'm' }, { model: 'm' }] });
    expect((await h.call('DELETE', `/v1/containers/${c.body.id}`)).status).toBe(200);
    const left = await h.app.services.db
      .selectFrom('task_logs')
      .select('id')
      .where('container_id', '=', c.body.id)
      .execute();
    expect(left).toEqual([]);
    expect(await countContainerLogs(h.app.services.db, c.body.id)).toBe(0);
  });

  it('rejects missing, revoked and under-permitted keys, and hides other projects (404)', async () => {
    const reader = await h.key(['logs:read']);
    const noLogs = await h.key(['containers:read', 'containers:write']);
    const revoked = await h.key(['*']);
    await revokeKey(h.app.services.db, revoked.id);
    h.app.services.auth.forget(revoked.id);
    const stranger = await h.key(['*'], 'another');
    const path = `/v1/containers/${container.id}/logs`;
    const routes: [string, unknown?][] = [['GET'], ['POST', [{ model: 'm' }]]];
    for (const [method, body] of routes) {
      expect((await h.call(method, path, { key: null, body })).status).toBe(401);
      expect((await h.call(method, path, { key: revoked.key, body })).status).toBe(401);
      const limited = await h.call(method, path, { key: reader.key, body });
      expect(limited.status, method).toBe(method === 'GET' ? 200 : 403);
      const none = await h.call(method, path, { key: noLogs.key, body });
      expect(none.status).toBe(403);
      expect(none.body.error.code).toBe('permission_denied');
      const theirs = await h.call(method, path, { key: stranger.key, body });
      expect(theirs.status).toBe(404);
      expect(theirs.body.error.code).toBe('not_found');
      expect((await h.call(method, '/v1/containers/nope/logs', { body })).status).toBe(404);
    }
  });
});
