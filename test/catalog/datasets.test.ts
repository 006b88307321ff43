import { gzipSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { revokeKey } from '../../src/auth/key-store.js';
import { countDatasetItems, readDatasetItems } from '../../src/catalog/datasets/items.js';
import { datasetInUse } from '../../src/catalog/datasets/repository.js';
import { nowIso } from '../../src/shared/ids.js';
import { type Harness, startHarness } from '../helpers/harness.js';

let h: Harness;
beforeAll(async () => {
  h = await startHarness();
});
afterAll(async () => {
  await h.close();
});

const lines = (rows: unknown[]) => rows.map((r) => JSON.stringify(r)).join('\n');
const ndjson = { 'content-type': 'application/x-ndjson' };

describe('datasets', () => {
  it('creates from JSON, reads by id and label, lists, patches and deletes', async () => {
    const created = await h.call('POST', '/v1/datasets', {
      body: {
        label: 'qa',
        description: 'Questions',
        metadata: { team: 'a' },
        items: [
          { input: 'q1', expected: 'a1' },
          { id: 'row-2', input: 'q2', output: 'o2', expected: 'a2', metadata: { k: 1 } },
        ],
      },
    });
    expect(created.status).toBe(201);
    expect(created.body).toMatchObject({
      object: 'dataset',
      label: 'qa',
      description: 'Questions',
      metadata: { team: 'a' },
      item_count: 2,
    });
    expect(created.body.id).toMatch(/^ds_/);

    const byLabel = await h.call('GET', '/v1/datasets/qa');
    expect(byLabel.status).toBe(200);
    expect(byLabel.body.id).toBe(created.body.id);
    expect((await h.call('GET', `/v1/datasets/${created.body.id}`)).body.label).toBe('qa');

    const items = await h.call('GET', '/v1/datasets/qa/items');
    expect(items.status).toBe(200);
    expect(items.body.total).toBe(2);
    expect(items.body.data).toEqual([
      {
        object: 'dataset.item',
        position: 0,
        id: `${created.body.id}:0`,
        data: { input: 'q1', expected: 'a1' },
      },
      {
        object: 'dataset.item',
        position: 1,
        id: 'row-2',
        data: { id: 'row-2', input: 'q2', output: 'o2', expected: 'a2', metadata: { k: 1 } },
      },
    ]);

    // The canonical items the engine reads.
    const canonical = await readDatasetItems(h.app.services.db, created.body.id, { start: 0, end: 10 });
    expect(canonical).toEqual([
      {
        id: `${created.body.id}:0`,
        input: 'q1',
        output: null,
        expected: 'a1',
        metadata: {},
        raw: { input: 'q1', expected: 'a1' },
      },
      {
        id: 'row-2',
        input: 'q2',
        output: 'o2',
        expected: 'a2',
        metadata: { k: 1 },
        raw: { id: 'row-2', input: 'q2', output: 'o2', expected: 'a2', metadata: { k: 1 } },
      },
    ]);
    expect(await countDatasetItems(h.app.services.db, created.body.id)).toBe(2);

    const patched = await h.call('PATCH', '/v1/datasets/qa', { body: { label: 'qa2', description: null } });
    expect(patched.status).toBe(200);
    expect(patched.body).toMatchObject({ label: 'qa2', description: null, item_count: 2 });

    const list = await h.call('GET', '/v1/datasets?limit=1');
    expect(list.body.total).toBeGreaterThanOrEqual(1);
    expect(list.body.data).toHaveLength(1);

    const del = await h.call('DELETE', `/v1/datasets/${created.body.id}`);
    expect(del.body).toEqual({ object: 'dataset', id: created.body.id, deleted: true });
    expect((await h.call('GET', `/v1/datasets/${created.body.id}`)).status).toBe(404);
    const left = await h.app.services.db
      .selectFrom('dataset_items')
      .select((eb) => eb.fn.countAll<number>().as('n'))
      .where('dataset_id', '=', created.body.id)
      .executeTakeFirstOrThrow();
    expect(Number(left.n)).toBe(0);
  });

  it('takes a JSON-lines upload (plain or gzip), with the label and description in the query', async () => {
    const rows = Array.from({ length: 50 }, (_, i) => ({ input: `q${i}`, expected: i }));
    const up = await h.call('POST', '/v1/datasets?label=lines&description=From%20a%20file', {
      raw: `\ufeff${lines(rows.slice(0, 25))}\r\n\n${lines(rows.slice(25))}\n`,
      headers: ndjson,
    });
    expect(up.status).toBe(201);
    expect(up.body).toMatchObject({ label: 'lines', description: 'From a file', item_count: 50 });

    const zipped = await h.call('POST', '/v1/datasets?label=zipped', {
      raw: gzipSync(lines(rows)),
      headers: { 'content-type': 'application/jsonl', 'content-encoding': 'gzip' },
    });
    expect(zipped.status).toBe(201);
    expect(zipped.body.item_count).toBe(50);

    const slice = await h.call('GET', '/v1/datasets/zipped/items?range=10:40&offset=5&limit=3');
    expect(slice.body.total).toBe(30);
    expect(slice.body.data.map((d: any) => d.position)).toEqual([15, 16, 17]);
    expect(slice.body.data[0].data).toEqual({ input: 'q15', expected: 15 });
    // A range past the end is clamped to what exists.
    const tail = await h.call('GET', '/v1/datasets/zipped/items?range=45:1000');
    expect(tail.body.total).toBe(5);
    expect(tail.body.data).toHaveLength(5);
  });

  it('answers 409 on label clashes, before reading an upload too', async () => {
    await h.call('POST', '/v1/datasets', { body: { label: 'dup', items: [] } });
    const json = await h.call('POST', '/v1/datasets', { body: { label: 'dup', items: [{ a: 1 }] } });
    expect(json.status).toBe(409);
    expect(json.body.error.code).toBe('conflict');
    const up = await h.call('POST', '/v1/datasets?label=dup', { raw: '{"a":1}\n', headers: ndjson });
    expect(up.status).toBe(409);
    await h.call('POST', '/v1/datasets', { body: { label: 'other', items: [] } });
    const patch = await h.call('PATCH', '/v1/datasets/other', { body: { label: 'dup' } });
    expect(patch.status).toBe(409);
  });

  it('answers 422 for bad bodies, labels, rows and ranges', async () => {
    const cases: [unknown, (string | number)[]][] = [
      [{ items: [] }, ['body', 'label']],
      [{ label: 'x' }, ['body', 'items']],
      [{ label: 'ds_x', items: [] }, ['body', 'label']],
      [{ label: 'a/b', items: [] }, ['body', 'label']],
      [{ label: 'x', items: [1] }, ['body', 'items', 0]],
      [{ label: 'x', items: [], extra: 1 }, ['body', 'extra']],
    ];
    for (const [body, loc] of cases) {
      const res = await h.call('POST', '/v1/datasets', { body });
      expect(res.status, JSON.stringify(body)).toBe(422);
      expect(res.body.detail.map((d: any) => d.loc)).toContainEqual(loc);
    }
    // The same checks apply to JSON sent under another JSON media type.
    const vendor = await h.call('POST', '/v1/datasets', {
      raw: JSON.stringify({ label: 'v', items: [1] }),
      headers: { 'content-type': 'application/vnd.api+json' },
    });
    expect(vendor.status).toBe(422);
    expect(vendor.body.detail[0].loc).toEqual(['body', 'items', 0]);

    const noLabel = await h.call('POST', '/v1/datasets', { raw: '{"a":1}\n', headers: ndjson });
    expect(noLabel.status).toBe(422);
    expect(noLabel.body.detail[0].loc).toEqual(['query', 'label']);

    const notObjects = await h.call('POST', '/v1/datasets?label=bad', {
      raw: '{"a":1}\n[1,2]\n"x"\n{"b":\n{"__proto__":{"x":1}}\n',
      headers: ndjson,
    });
    expect(notObjects.status).toBe(422);
    expect(notObjects.body.detail.map((d: any) => d.loc)).toEqual([
      ['body', 'line', 2],
      ['body', 'line', 3],
      ['body', 'line', 4],
      ['body', 'line', 5],
    ]);
    expect((await h.call('GET', '/v1/datasets/bad')).status).toBe(404);

    await h.call('POST', '/v1/datasets', { body: { label: 'r', items: [{ a: 1 }] } });
    const reversed = await h.call('GET', '/v1/datasets/r/items?range=5:2');
    expect(reversed.status).toBe(422);
    expect(reversed.body.detail[0].loc).toEqual(['query', 'range']);
    expect((await h.call('GET', '/v1/datasets/r/items?range=1-2')).status).toBe(422);
    expect((await h.call('GET', '/v1/datasets/r/items?limit=101')).status).toBe(422);
  });

  it('answers 415 for other media types and encodings, 400 for corrupt gzip', async () => {
    const text = await h.call('POST', '/v1/datasets?label=t', {
      raw: '{"a":1}',
      headers: { 'content-type': 'text/plain' },
    });
    expect(text.status).toBe(415);
    const br = await h.call('POST', '/v1/datasets?label=t', {
      raw: '{"a":1}',
      headers: { ...ndjson, 'content-encoding': 'br' },
    });
    expect(br.status).toBe(415);
    const corrupt = await h.call('POST', '/v1/datasets?label=t', {
      raw: new Uint8Array([0x1f, 0x8b, 8, 0, 1, 2, 3, 4, 5, 6, 7, 8]),
      headers: { ...ndjson, 'content-encoding': 'gzip' },
    });
    expect(corrupt.status).toBe(400);
    expect(corrupt.body.error.code).toBe('bad_request');
    expect((await h.call('GET', '/v1/datasets/t')).status).toBe(404);
  });

  it('answers 409 resource_in_use while a queued or running run uses the dataset', async () => {
    const ds = await h.call('POST', '/v1/datasets', { body: { label: 'used', items: [{ a: 1 }] } });
    const ctr = await h.call('POST', '/v1/containers', { body: { label: 'runs-here' } });
    const db = h.app.services.db;
    expect(await datasetInUse(db, ds.body.id)).toBe(false);
    const now = nowIso();
    await db
      .insertInto('runs')
      .values({
        id: 'run_test_1',
        project_id: h.admin.projectId,
        container_id: ctr.body.id,
        status: 'running',
        environment: 'main',
        evaluators: '[]',
        dataset_ids: JSON.stringify([ds.body.id]),
        config: '{}',
        metadata: null,
        plan: '{}',
        results: null,
        metrics: null,
        spend: null,
        error: null,
        process_id: null,
        idempotency_key: null,
        request_hash: null,
        cancel_requested: 0,
        created_at: now,
        started_at: null,
        finished_at: null,
        error_at: null,
        updated_at: now,
      })
      .execute();
    const busy = await h.call('DELETE', `/v1/datasets/${ds.body.id}`);
    expect(busy.status).toBe(409);
    expect(busy.body.error.code).toBe('resource_in_use');
    await db.updateTable('runs').set({ status: 'completed' }).where('id', '=', 'run_test_1').execute();
    expect((await h.call('DELETE', `/v1/datasets/${ds.body.id}`)).status).toBe(200);
  });

  it('answers 404 for unknown datasets, and deletes by id only', async () => {
    expect((await h.call('GET', '/v1/datasets/nope')).status).toBe(404);
    expect((await h.call('GET', '/v1/datasets/nope/items')).status).toBe(404);
    expect((await h.call('PATCH', '/v1/datasets/nope', { body: {} })).status).toBe(404);
    await h.call('POST', '/v1/datasets', { body: { label: 'by-label', items: [] } });
    const del = await h.call('DELETE', '/v1/datasets/by-label');
    expect(del.status).toBe(404);
  });

  it('rejects missing, revoked and under-permitted keys, and hides other projects (404)', async () => {
    const ds = await h.call('POST', '/v1/datasets', { body: { label: 'private', items: [{ a: 1 }] } });
    const reader = await h.key(['data:read']);
    const revoked = await h.key(['*']);
    await revokeKey(h.app.services.db, revoked.id);
    h.app.services.auth.forget(revoked.id);
    const stranger = await h.key(['*'], 'other-project');
    const routes: [string, string, unknown?][] = [
      ['GET', '/v1/datasets'],
      ['GET', `/v1/datasets/${ds.body.id}`],
      ['GET', `/v1/datasets/${ds.body.id}/items`],
      ['POST', '/v1/datasets', { label: 'n', items: [] }],
      ['PATCH', `/v1/datasets/${ds.body.id}`, { description: 'x' }],
      ['DELETE', `/v1/datasets/${ds.body.id}`],
    ];
    for (const [method, path, body] of routes) {
      const missing = await h.call(method, path, { key: null, body });
      expect(missing.status, `${method} ${path}`).toBe(401);
      expect(missing.body.error.code).toBe('invalid_api_key');
      expect((await h.call(method, path, { key: revoked.key, body })).status).toBe(401);
      const write = method !== 'GET';
      const limited = await h.call(method, path, { key: reader.key, body });
      if (write) {
        expect(limited.status, `${method} ${path}`).toBe(403);
        expect(limited.body.error.code).toBe('permission_denied');
      } else expect(limited.status).toBe(200);
    }
    for (const [method, path, body] of routes.filter(([, p]) => p.includes(ds.body.id))) {
      expect((await h.call(method, path, { key: stranger.key, body })).status, `${method} ${path}`).toBe(404);
    }
    const theirs = await h.call('GET', '/v1/datasets', { key: stranger.key });
    expect(theirs.body.total).toBe(0);
    // The same label is free in another project.
    const same = await h.call('POST', '/v1/datasets', {
      key: stranger.key,
      body: { label: 'private', items: [] },
    });
    expect(same.status).toBe(201);
  });
});
