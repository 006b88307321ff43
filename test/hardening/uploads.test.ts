import { readdirSync } from 'node:fs';
import path from 'node:path';
import { gzipSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MAX_GZIP_RATIO } from '../../src/http/uploads.js';
import { type Harness, startHarness } from '../helpers/harness.js';

/**
 * Issue 15, item 6: a gzip upload is bounded by the upload limit once decompressed and by a ratio, and
 * is stopped as soon as either is crossed; an upload without rows is a 422, not an empty dataset.
 */
const ndjson = { 'content-type': 'application/x-ndjson' };
const gzipped = { ...ndjson, 'content-encoding': 'gzip' };

/**
 * About 1 MB of gzip holding 1 GiB of newlines: one 64 MiB member repeated 16 times (a gzip stream may
 * hold several members, and gunzip reads them all).
 */
function newlineBomb(): Buffer {
  const member = gzipSync(Buffer.alloc(64 << 20, 0x0a), { level: 9 });
  return Buffer.concat(Array.from({ length: 16 }, () => member));
}

let h: Harness;
beforeAll(async () => {
  h = await startHarness();
  await h.call('POST', '/v1/containers', { body: { label: 'bombed' } });
});
afterAll(async () => {
  await h.close();
});

function spoolFiles(harness: Harness): string[] {
  try {
    return readdirSync(path.join(harness.config.dataDir, 'tmp'));
  } catch {
    return [];
  }
}

describe('gzip uploads', () => {
  it('stops a compression bomb at once: 413 with the ratio, nothing spooled, no dataset', async () => {
    const bomb = newlineBomb();
    expect(bomb.length).toBeLessThan(2 << 20);
    const started = Date.now();
    const res = await h.call('POST', '/v1/datasets?label=bomb', { raw: bomb, headers: gzipped });
    const elapsed = Date.now() - started;
    expect(res.status).toBe(413);
    expect(res.body.error.code).toBe('payload_too_large');
    expect(res.body.error.details.max_ratio).toBe(MAX_GZIP_RATIO);
    expect(res.body.error.details.decompressed_bytes).toBeLessThan(64 << 20);
    // The rest of the body is never read: the connection ends with the answer instead of hanging on.
    expect(res.headers.get('connection')).toBe('close');
    // Before the fix: 71 s and a 1 GiB spool file for this body.
    expect(elapsed).toBeLessThan(5000);
    expect(spoolFiles(h)).toEqual([]);
    expect((await h.call('GET', '/v1/datasets/bomb')).status).toBe(404);
  });

  it('stops the same bomb sent as a task log import', async () => {
    const res = await h.call('POST', '/v1/containers/bombed/logs', { raw: newlineBomb(), headers: gzipped });
    expect(res.status).toBe(413);
    expect(res.body.error.details.max_ratio).toBe(MAX_GZIP_RATIO);
    expect((await h.call('GET', '/v1/containers/bombed/logs')).body.data).toEqual([]);
  });

  it('takes ordinary gzip uploads, and small ones whatever their ratio', async () => {
    const rows = Array.from({ length: 2000 }, (_, i) => JSON.stringify({ id: `r${i}`, input: `q${i}` }));
    const res = await h.call('POST', '/v1/datasets?label=zipped', {
      raw: gzipSync(`${rows.join('\n')}\n`),
      headers: gzipped,
    });
    expect(res.status, res.text).toBe(201);
    expect(res.body.item_count).toBe(2000);
    // 400 KB of identical rows compress more than 100 times, but stay under the first MiB.
    const same = `${JSON.stringify({ input: 'same' })}\n`.repeat(20_000);
    expect(same.length / gzipSync(same).length).toBeGreaterThan(MAX_GZIP_RATIO);
    const small = await h.call('POST', '/v1/datasets?label=repetitive', {
      raw: gzipSync(same),
      headers: gzipped,
    });
    expect(small.status, small.text).toBe(201);
    expect(small.body.item_count).toBe(20_000);
  });

  it('refuses a compressed JSON body with 415 instead of parsing its compressed bytes', async () => {
    const res = await h.call('POST', '/v1/datasets', {
      raw: gzipSync(JSON.stringify({ label: 'json-gz', items: [{ a: 1 }] })),
      headers: { 'content-type': 'application/json', 'content-encoding': 'gzip' },
    });
    expect(res.status).toBe(415);
    expect(res.body.error.code).toBe('unsupported_media_type');
    expect(res.body.error.message).toMatch(/Content-Encoding/);
  });
});

describe('the upload limit counts decompressed bytes', () => {
  let small: Harness;
  beforeAll(async () => {
    small = await startHarness({ env: { EVALGATE_UPLOAD_LIMIT: '65536' } });
  });
  afterAll(async () => {
    await small.close();
  });

  it('answers 413 past EVALGATE_UPLOAD_LIMIT of decompressed output, whatever the compressed size', async () => {
    const rows = Array.from({ length: 5000 }, (_, i) => JSON.stringify({ id: i, text: `row ${i}` }));
    const body = gzipSync(`${rows.join('\n')}\n`);
    expect(body.length).toBeLessThan(65536);
    const res = await small.call('POST', '/v1/datasets?label=over', { raw: body, headers: gzipped });
    expect(res.status).toBe(413);
    expect(res.body.error.details).toMatchObject({ limit: 65536, decompressed: true });
    expect(spoolFiles(small)).toEqual([]);
    expect((await small.call('GET', '/v1/datasets/over')).status).toBe(404);
  });
});

describe('uploads without rows', () => {
  it('answers 422 for blank lines only, plain or gzip, and leaves the label free', async () => {
    for (const [raw, headers] of [
      ['', ndjson],
      ['\n\n\r\n   \n', ndjson],
      [gzipSync('\n'.repeat(10_000)), gzipped],
    ] as const) {
      const res = await h.call('POST', '/v1/datasets?label=nothing', { raw, headers });
      expect(res.status).toBe(422);
      expect(res.body.detail).toEqual([expect.objectContaining({ loc: ['body'], type: 'too_short' })]);
    }
    expect(spoolFiles(h)).toEqual([]);
    const later = await h.call('POST', '/v1/datasets?label=nothing', { raw: '{"a":1}\n', headers: ndjson });
    expect(later.status).toBe(201);
  });
});
