import { randomBytes } from 'node:crypto';
import http from 'node:http';
import { gzipSync } from 'node:zlib';
import type protobuf from 'protobufjs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { decodePoolState, decodeThreadsHeld, INLINE_BYTES } from '../../src/traces/otlp/decode-pool.js';
import { type Harness, startHarness } from '../helpers/harness.js';
import { otlpTypes } from '../helpers/otlp-proto.js';
import { manySpans } from './bombs.js';
import { settled } from './helpers.js';

/**
 * Large OTLP bodies received off the event loop (their chunks handed to a decode thread as they arrive,
 * gunzipped and decoded there) and the bound on export bytes in flight (429 past it), through the app.
 */
let h: Harness;
let types: { request: protobuf.Type; status: protobuf.Type };

beforeAll(async () => {
  h = await startHarness();
  expect((await h.call('POST', '/v1/containers', { body: { label: 'stream' } })).status).toBe(201);
  const t = otlpTypes();
  types = { request: t.traceRequest, status: t.status };
}, 60_000);
afterAll(async () => {
  await h?.close();
});

const PROTO = { 'content-type': 'application/x-protobuf', 'x-evalgate-container': 'stream' };
const JSON_TYPE = { 'content-type': 'application/json', 'x-evalgate-container': 'stream' };
const GZIP = { 'content-encoding': 'gzip' };

/** An OTLP/JSON request of `n` spans of one new trace, each with two attributes. */
function jsonSpans(n: number) {
  const traceId = randomBytes(16).toString('hex');
  const start = BigInt(Date.now()) * 1_000_000n;
  const spans = Array.from({ length: n }, (_, i) => ({
    traceId,
    spanId: randomBytes(8).toString('hex'),
    name: `step ${i}`,
    kind: 1,
    startTimeUnixNano: String(start + BigInt(i)),
    endTimeUnixNano: String(start + BigInt(i) + 1_000_000n),
    attributes: [
      { key: 'n', value: { intValue: String(i) } },
      { key: 'text', value: { stringValue: `value ${i} of a large export` } },
    ],
  }));
  const request = { resourceSpans: [{ scopeSpans: [{ scope: { name: 'stream-test' }, spans }] }] };
  return { traceId, request };
}

/** The same request in protobuf (ids as bytes). */
function protobufOf(json: ReturnType<typeof jsonSpans>['request']): Buffer {
  const copy = structuredClone(json) as {
    resourceSpans: { scopeSpans: { spans: Record<string, unknown>[] }[] }[];
  };
  for (const s of copy.resourceSpans[0]!.scopeSpans[0]!.spans) {
    s.traceId = Buffer.from(s.traceId as string, 'hex');
    s.spanId = Buffer.from(s.spanId as string, 'hex');
  }
  return Buffer.from(types.request.encode(types.request.fromObject(copy)).finish());
}

/** A POST through node:http with the body written in chunks; the status, headers and body of the answer. */
function post(
  body: Buffer,
  headers: Record<string, string>,
  options: { target?: Harness; chunked?: boolean } = {},
): Promise<{ status: number; headers: http.IncomingHttpHeaders; body: Buffer }> {
  const target = options.target ?? h;
  return new Promise((resolve, reject) => {
    const req = http.request(`${target.url}/v1/traces`, {
      method: 'POST',
      headers: {
        authorization: `Bearer ${target.admin.key}`,
        ...(options.chunked ? {} : { 'content-length': body.length }),
        ...headers,
      },
    });
    req.on('response', (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () =>
        resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks) }),
      );
    });
    req.on('error', reject);
    for (let at = 0; at < body.length; at += 64 * 1024) req.write(body.subarray(at, at + 64 * 1024));
    req.end();
  });
}

interface StoredSpan {
  name: string;
  kind: string;
  started_at: string;
  attributes: string;
}

async function storedSpans(target: Harness, traceId: string): Promise<StoredSpan[]> {
  await settled(target);
  return (await target.services.db
    .selectFrom('spans')
    .select(['name', 'kind', 'started_at', 'attributes'])
    .where('project_id', '=', target.admin.projectId)
    .where('trace_id', '=', traceId)
    .orderBy('started_at')
    .execute()) as StoredSpan[];
}

async function until(check: () => Promise<boolean> | boolean, what: string): Promise<void> {
  for (let i = 0; i < 500; i++) {
    if (await check()) return;
    await new Promise((r) => setTimeout(r, 10));
  }
  throw new Error(`timed out waiting until ${what}`);
}

const statusOf = (res: { headers: http.IncomingHttpHeaders; body: Buffer }) =>
  res.headers['content-type']?.includes('json')
    ? (JSON.parse(res.body.toString()) as { code: number; message: string })
    : (types.status.toObject(types.status.decode(res.body)) as { code: number; message: string });

describe('large OTLP bodies', () => {
  it('are decoded and stored as small ones are, protobuf and JSON, plain and gzipped, never held here', async () => {
    // The reference: one span sent small (decoded inline), as before.
    const small = jsonSpans(1);
    expect((await post(Buffer.from(JSON.stringify(small.request)), JSON_TYPE)).status).toBe(200);
    const [reference] = await storedSpans(h, small.traceId);
    expect(reference).toBeDefined();
    const same = (row: StoredSpan | undefined) => ({ ...row, started_at: undefined });

    const variants: [
      string,
      (j: ReturnType<typeof jsonSpans>['request']) => Buffer,
      Record<string, string>,
    ][] = [
      ['protobuf', protobufOf, PROTO],
      ['protobuf, gzipped', (j) => gzipSync(protobufOf(j)), { ...PROTO, ...GZIP }],
      ['JSON', (j) => Buffer.from(JSON.stringify(j)), JSON_TYPE],
      ['JSON, gzipped', (j) => gzipSync(JSON.stringify(j)), { ...JSON_TYPE, ...GZIP }],
    ];
    for (const [name, encode, headers] of variants) {
      const { traceId, request } = jsonSpans(6_000);
      const body = encode(request);
      expect(body.length, name).toBeGreaterThan(INLINE_BYTES);
      const before = decodePoolState().forwarded;
      const res = await post(body, headers);
      expect(res.status, `${name}: ${res.body}`).toBe(200);
      // Every byte of the body (compressed as sent) went to a decode thread as it arrived, the socket's
      // chunks moved there without a copy (only one that shares its memory, e.g. with the headers, is copied).
      const after = decodePoolState().forwarded;
      expect(after.bytes - before.bytes, name).toBe(body.length);
      expect(after.transferred - before.transferred, name).toBeGreaterThan(after.copied - before.copied);
      const rows = await storedSpans(h, traceId);
      expect(rows.length, name).toBe(6_000);
      const first = rows.find((r) => r.name === 'step 0');
      expect(same(first), name).toEqual(same({ ...reference!, name: 'step 0' }));
    }
    expect(decodePoolState().jobs).toBe(0);
    expect(h.services.otlpInflight.counts().bytes).toBe(0);
  }, 60_000);

  it('refuses a gzip bomb of more than 1 MiB compressed with 413 once decompressed', async () => {
    // Incompressible bytes first (so that the bomb is large as sent), then zeros past the body limit.
    const bomb = gzipSync(Buffer.concat([randomBytes(1_200_000), Buffer.alloc(h.config.bodyLimit)]));
    expect(bomb.length).toBeGreaterThan(1024 * 1024);
    const before = decodePoolState().forwarded.bytes;
    const res = await post(bomb, { ...PROTO, ...GZIP });
    expect(res.status).toBe(413);
    expect(statusOf(res)).toEqual({
      code: 8,
      message: `The export request exceeds ${h.config.bodyLimit} bytes once decompressed`,
    });
    expect(decodePoolState().forwarded.bytes - before).toBe(bomb.length);
  }, 30_000);

  it('refuses a body over the limit sent in chunks with 413 as it passes the limit', async () => {
    const body = Buffer.alloc(h.config.bodyLimit + 512 * 1024, 1);
    const before = decodePoolState().forwarded.bytes;
    const res = await post(body, PROTO, { chunked: true });
    expect(res.status).toBe(413);
    expect(statusOf(res).message).toBe(`The export request exceeds ${h.config.bodyLimit} bytes`);
    // Forwarding stopped at the limit, and the thread dropped what it held.
    expect(decodePoolState().forwarded.bytes - before).toBeLessThanOrEqual(h.config.bodyLimit);
    await until(async () => (await decodeThreadsHeld()).jobs === 0, 'the thread dropped the job');
    expect(decodePoolState().jobs).toBe(0);
    await until(() => h.services.otlpInflight.counts().bytes === 0, 'the bytes in flight are released');
  }, 30_000);

  it('drops the job of a client that leaves mid-body; another body on the thread is taken', async () => {
    const { traceId, request } = jsonSpans(3_000);
    const stays = protobufOf(request);
    const leaves = manySpans(40_000);
    const open = (body: Buffer) =>
      http.request(`${h.url}/v1/traces`, {
        method: 'POST',
        headers: { authorization: `Bearer ${h.admin.key}`, 'content-length': body.length, ...PROTO },
      });
    const a = open(stays);
    const answered = new Promise<number>((resolve, reject) => {
      a.on('response', (res) => {
        res.resume();
        res.on('end', () => resolve(res.statusCode ?? 0));
      });
      a.on('error', reject);
    });
    a.write(stays.subarray(0, 100_000));
    const b = open(leaves);
    b.on('error', () => {});
    b.write(leaves.subarray(0, 500_000));
    await until(
      async () => (await decodeThreadsHeld()).bytes === 600_000,
      'the thread holds both bodies so far',
    );
    expect(decodePoolState().jobs).toBe(2);

    b.destroy();
    await until(async () => (await decodeThreadsHeld()).jobs === 1, 'the thread dropped the job that left');
    expect(await decodeThreadsHeld()).toEqual({ jobs: 1, bytes: 100_000 });
    expect(decodePoolState().jobs).toBe(1);

    a.end(stays.subarray(100_000));
    expect(await answered).toBe(200);
    expect((await storedSpans(h, traceId)).length).toBe(3_000);
    expect(decodePoolState().jobs).toBe(0);
    await until(() => h.services.otlpInflight.counts().bytes === 0, 'the bytes in flight are released');
  }, 30_000);
});

describe('OTLP bytes in flight', () => {
  let g: Harness;
  const BOUND = 1024 * 1024;
  beforeAll(async () => {
    g = await startHarness({
      env: { EVALGATE_BODY_LIMIT: String(2 * BOUND), EVALGATE_OTLP_MAX_INFLIGHT_BYTES: String(BOUND) },
    });
    expect((await g.call('POST', '/v1/containers', { body: { label: 'stream' } })).status).toBe(201);
  }, 60_000);
  afterAll(async () => {
    await g?.close();
  });

  it('answers 429 with Retry-After and a Status past the bound, and takes a lone request of the body limit', async () => {
    // A slow export of 900 KB holds most of the bound while its body arrives.
    const slow = manySpans(20_000);
    expect(slow.length).toBeGreaterThan(800_000);
    const a = http.request(`${g.url}/v1/traces`, {
      method: 'POST',
      headers: { authorization: `Bearer ${g.admin.key}`, 'content-length': slow.length, ...PROTO },
    });
    const answered = new Promise<number>((resolve, reject) => {
      a.on('response', (res) => {
        res.resume();
        res.on('end', () => resolve(res.statusCode ?? 0));
      });
      a.on('error', reject);
    });
    a.write(slow.subarray(0, 1000));
    await until(() => g.services.otlpInflight.counts().bytes >= slow.length, 'the slow export is taken');

    const busy = 'The trace store is busy with other exports; retry after 1 s';
    const proto = await post(manySpans(5_000), PROTO, { target: g });
    expect(proto.status).toBe(429);
    expect(proto.headers['retry-after']).toBe('1');
    // The connection stays open (the unread body is discarded), so the answer is not lost to a reset.
    expect(proto.headers.connection).toBe('keep-alive');
    expect(proto.headers['content-type']).toBe('application/x-protobuf');
    expect(statusOf(proto)).toEqual({ code: 8, message: busy });
    const json = await post(Buffer.from(JSON.stringify(jsonSpans(1_000).request)), JSON_TYPE, { target: g });
    expect(json.status).toBe(429);
    expect(json.headers['retry-after']).toBe('1');
    expect(JSON.parse(json.body.toString())).toEqual({ code: 8, message: busy });

    a.end(slow.subarray(1000));
    expect(await answered).toBe(200);
    await until(() => g.services.otlpInflight.counts().bytes === 0, 'the slow export is released');

    // Alone, a request larger than the bound (near the body limit) is taken.
    const { traceId, request } = jsonSpans(12_000);
    const lone = protobufOf(request);
    expect(lone.length).toBeGreaterThan(BOUND);
    expect(lone.length).toBeLessThanOrEqual(g.config.bodyLimit);
    expect((await post(lone, PROTO, { target: g })).status).toBe(200);
    expect((await storedSpans(g, traceId)).length).toBe(12_000);

    const { key } = await g.key(['metrics:read']);
    const metrics = (await g.call('GET', '/metrics', { key })).text;
    expect(metrics).toMatch(/^evalgate_otlp_inflight_bytes 0$/m);
    expect(metrics).toMatch(/^evalgate_otlp_busy_total 2$/m);
  }, 60_000);
});
