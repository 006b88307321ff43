import fs from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import { Readable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Harness, startHarness } from '../helpers/harness.js';
import { waitFor } from '../helpers/wait.js';

let h: Harness;
beforeAll(async () => {
  h = await startHarness();
});
afterAll(async () => {
  await h.close();
});

const row = (i: number) => ({
  id: `r${i}`,
  input: `What is ${i} + ${i}?`,
  expected: String(i + i),
  metadata: { bucket: i % 7 },
});

/** `count` rows as JSON lines, generated while they are sent (never as one string in memory). */
function* rows(count: number, bad?: { line: number; text: string }): Generator<string> {
  let chunk = '';
  for (let i = 0; i < count; i++) {
    chunk += i + 1 === bad?.line ? `${bad.text}\n` : `${JSON.stringify(row(i))}\n`;
    if (chunk.length > 64 * 1024) {
      yield chunk;
      chunk = '';
    }
  }
  if (chunk) yield chunk;
}

/** POSTs a streamed body (chunked transfer encoding). */
async function upload(query: string, body: Iterable<string>, key = h.admin.key) {
  const res = await fetch(`${h.url}/v1/datasets?${query}`, {
    method: 'POST',
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/x-ndjson' },
    body: Readable.toWeb(Readable.from(body)) as ReadableStream,
    duplex: 'half',
  } as RequestInit);
  return { status: res.status, body: (await res.json()) as any };
}

async function storedItems(): Promise<number> {
  const r = await h.app.services.db
    .selectFrom('dataset_items')
    .select((eb) => eb.fn.countAll<number>().as('n'))
    .executeTakeFirstOrThrow();
  return Number(r.n);
}

const spoolDir = () => path.join(h.config.dataDir, 'tmp');
const spooled = () => (fs.existsSync(spoolDir()) ? fs.readdirSync(spoolDir()) : []);

describe('JSON-lines dataset uploads', () => {
  it('streams 200,000 rows and reads back rows 150000:150010', { timeout: 180_000 }, async () => {
    const up = await upload('label=big', rows(200_000));
    expect(up.status).toBe(201);
    expect(up.body.item_count).toBe(200_000);

    const slice = await h.call('GET', '/v1/datasets/big/items?range=150000:150010');
    expect(slice.status).toBe(200);
    expect(slice.body.total).toBe(10);
    expect(slice.body.data).toEqual(
      Array.from({ length: 10 }, (_, k) => ({
        object: 'dataset.item',
        position: 150_000 + k,
        id: `r${150_000 + k}`,
        data: row(150_000 + k),
      })),
    );
    const last = await h.call('GET', '/v1/datasets/big/items?offset=199999');
    expect(last.body.data.map((d: any) => d.id)).toEqual(['r199999']);
    expect(spooled()).toEqual([]);
  });

  it('answers 422 naming the line of a bad row in the middle, and stores nothing', {
    timeout: 120_000,
  }, async () => {
    const before = await storedItems();
    const up = await upload('label=broken', rows(100_000, { line: 61_234, text: '{"input": "unterminated' }));
    expect(up.status).toBe(422);
    expect(up.body.detail).toHaveLength(1);
    expect(up.body.detail[0].loc).toEqual(['body', 'line', 61_234]);
    expect(up.body.detail[0].msg).toMatch(/^Line 61234: Unterminated string/);
    expect(up.body.detail[0].type).toBe('json_invalid');

    const notObject = await upload('label=broken', rows(1_000, { line: 500, text: '[1, 2, 3]' }));
    expect(notObject.status).toBe(422);
    expect(notObject.body.detail[0]).toMatchObject({ loc: ['body', 'line', 500], type: 'dict_type' });

    expect((await h.call('GET', '/v1/datasets/broken')).status).toBe(404);
    const datasets = await h.app.services.db
      .selectFrom('datasets')
      .select('id')
      .where('label', '=', 'broken')
      .execute();
    expect(datasets).toEqual([]);
    expect(await storedItems()).toBe(before);
    expect(spooled()).toEqual([]);
  });

  it('keeps nothing when the client goes away mid-upload', async () => {
    const before = await storedItems();
    const { port } = new URL(h.url);
    const req = http.request({
      host: '127.0.0.1',
      port,
      method: 'POST',
      path: '/v1/datasets?label=abandoned',
      headers: { authorization: `Bearer ${h.admin.key}`, 'content-type': 'application/x-ndjson' },
    });
    req.on('error', () => {});
    for (const chunk of rows(20_000)) req.write(chunk);
    await new Promise((r) => setTimeout(r, 200));
    req.destroy();
    await waitFor(() => spooled().length === 0, 10_000, 'the spool file to be removed');
    expect((await h.call('GET', '/v1/datasets/abandoned')).status).toBe(404);
    expect(await storedItems()).toBe(before);
  });

  it('lists up to 20 bad lines in one answer', async () => {
    const bad = Array.from({ length: 30 }, (_, i) => (i % 2 ? '{"ok": true}' : 'nope')).join('\n');
    const res = await h.call('POST', '/v1/datasets?label=many-bad', {
      raw: bad,
      headers: { 'content-type': 'application/x-ndjson' },
    });
    expect(res.status).toBe(422);
    expect(res.body.detail).toHaveLength(15);
    expect(res.body.detail[14].loc).toEqual(['body', 'line', 29]);
  });

  it('refuses an upload with no rows, and the label stays free', async () => {
    const res = await h.call('POST', '/v1/datasets?label=empty', {
      raw: '\n\n',
      headers: { 'content-type': 'application/x-ndjson' },
    });
    expect(res.status).toBe(422);
    expect(res.body.detail[0]).toMatchObject({ loc: ['body'], type: 'too_short' });
    expect((await h.call('GET', '/v1/datasets/empty')).status).toBe(404);
  });
});

describe('upload limits', () => {
  let small: Harness;
  beforeAll(async () => {
    small = await startHarness({ env: { EVALGATE_BODY_LIMIT: '1024', EVALGATE_UPLOAD_LIMIT: '65536' } });
  });
  afterAll(async () => {
    await small.close();
  });

  it('answers 422 for a row longer than the body limit and 413 past the upload limit', async () => {
    const long = await small.call('POST', '/v1/datasets?label=long', {
      raw: `{"a":1}\n{"text":"${'x'.repeat(5000)}"}\n{"b":2}\n`,
      headers: { 'content-type': 'application/x-ndjson' },
    });
    expect(long.status).toBe(422);
    expect(long.body.detail[0]).toMatchObject({ loc: ['body', 'line', 2], type: 'too_long' });

    const line = `${JSON.stringify({ input: 'y'.repeat(100) })}\n`;
    const huge = await small.call('POST', '/v1/datasets?label=huge', {
      raw: line.repeat(1000),
      headers: { 'content-type': 'application/x-ndjson' },
    });
    expect(huge.status).toBe(413);
    expect(huge.body.error.code).toBe('payload_too_large');
    expect((await small.call('GET', '/v1/datasets/huge')).status).toBe(404);

    // The JSON body keeps the ordinary body limit.
    const json = await small.call('POST', '/v1/datasets', {
      body: { label: 'j', items: [{ text: 'z'.repeat(2000) }] },
    });
    expect(json.status).toBe(413);
  });
});
