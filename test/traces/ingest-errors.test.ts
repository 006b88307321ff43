import { randomBytes } from 'node:crypto';
import { gzipSync } from 'node:zlib';
import type protobuf from 'protobufjs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Harness, startHarness } from '../helpers/harness.js';
import { otlpTypes } from '../helpers/otlp-proto.js';
import { logsOf, settled } from './helpers.js';

/** The ingest's answers to bad, repeated and partly invalid export requests, in both encodings. */
let h: Harness;
let types: { request: protobuf.Type; response: protobuf.Type; status: protobuf.Type };

beforeAll(async () => {
  h = await startHarness({ env: { EVALGATE_BODY_LIMIT: String(256 * 1024) } });
  expect((await h.call('POST', '/v1/containers', { body: { label: 'errs' } })).status).toBe(201);
  const t = otlpTypes();
  types = { request: t.traceRequest, response: t.traceResponse, status: t.status };
});
afterAll(async () => {
  await h.close();
});

const hex = (n: number) => randomBytes(n).toString('hex');
const nowNs = () => `${BigInt(Date.now()) * 1_000_000n}`;

/** An OTLP/JSON request with one model-call span per given id pair. */
function jsonRequest(spans: { traceId: string; spanId: string }[], resource: Record<string, string> = {}) {
  return {
    resourceSpans: [
      {
        resource: {
          attributes: Object.entries({ 'service.name': 'raw', ...resource }).map(([key, v]) => ({
            key,
            value: { stringValue: v },
          })),
        },
        scopeSpans: [
          {
            scope: { name: 'raw-test', version: '1' },
            spans: spans.map((s) => ({
              ...s,
              name: 'chat m',
              kind: 3,
              startTimeUnixNano: nowNs(),
              endTimeUnixNano: nowNs(),
              attributes: [
                { key: 'gen_ai.operation.name', value: { stringValue: 'chat' } },
                { key: 'gen_ai.request.model', value: { stringValue: 'm' } },
                { key: 'gen_ai.usage.input_tokens', value: { intValue: '3' } },
                {
                  key: 'gen_ai.input.messages',
                  value: { stringValue: '[{"role":"user","parts":[{"type":"text","content":"hi"}]}]' },
                },
                {
                  key: 'gen_ai.output.messages',
                  value: { stringValue: '[{"role":"assistant","parts":[{"type":"text","content":"yo"}]}]' },
                },
              ],
            })),
          },
        ],
      },
    ],
  };
}

/** The same request in protobuf (ids as bytes). */
function protobufRequest(json: ReturnType<typeof jsonRequest>): Uint8Array {
  const copy = structuredClone(json) as any;
  for (const rs of copy.resourceSpans)
    for (const ss of rs.scopeSpans)
      for (const s of ss.spans) {
        s.traceId = Buffer.from(s.traceId, 'hex');
        s.spanId = Buffer.from(s.spanId, 'hex');
      }
  return types.request.encode(types.request.fromObject(copy)).finish();
}

async function post(body: string | Uint8Array, headers: Record<string, string>, key?: string | null) {
  return fetch(`${h.url}/v1/traces`, {
    method: 'POST',
    headers: { ...(key === null ? {} : { authorization: `Bearer ${key ?? h.admin.key}` }), ...headers },
    body,
  });
}

const JSON_TYPE = { 'content-type': 'application/json', 'x-evalgate-container': 'errs' };
const PROTO_TYPE = { 'content-type': 'application/x-protobuf', 'x-evalgate-container': 'errs' };

describe('OTLP ingest: bad input', () => {
  it('answers malformed protobuf and JSON with 400 and a google.rpc.Status body in their encoding', async () => {
    const proto = await post(Buffer.from([0x0a, 0xff, 0xff, 0xff, 0xff, 0x0f, 0x01]), PROTO_TYPE);
    expect(proto.status).toBe(400);
    expect(proto.headers.get('content-type')).toContain('application/x-protobuf');
    const status = types.status.toObject(types.status.decode(new Uint8Array(await proto.arrayBuffer())));
    expect(status.code).toBe(3);
    expect(status.message).toMatch(/protobuf/);

    for (const raw of ['{"resourceSpans": [', '[]', '{"resourceSpans": 5}', '"x"']) {
      const res = await post(raw, JSON_TYPE);
      expect(res.status, raw).toBe(400);
      const body = (await res.json()) as { code: number; message: string };
      expect(body.code, raw).toBe(3);
      expect(body.message, raw).toMatch(/OTLP\/JSON|JSON/);
    }
  });

  it('answers 413 to an oversized body and to a gzip bomb, decompressing no more than the limit', async () => {
    const big = 'x'.repeat(300 * 1024);
    const oversized = await post(JSON.stringify({ resourceSpans: [], pad: big }), JSON_TYPE);
    expect(oversized.status).toBe(413);
    expect(((await oversized.json()) as { code: number }).code).toBe(8);
    // 64 MiB of zeros in about 64 KiB of gzip.
    const bomb = gzipSync(Buffer.alloc(64 * 1024 * 1024));
    expect(bomb.length).toBeLessThan(256 * 1024);
    const res = await post(bomb, { ...PROTO_TYPE, 'content-encoding': 'gzip' });
    expect(res.status).toBe(413);
    const corrupt = await post(Buffer.from('not gzip'), { ...JSON_TYPE, 'content-encoding': 'gzip' });
    expect(corrupt.status).toBe(400);
    const deflate = await post('{}', { ...JSON_TYPE, 'content-encoding': 'br' });
    expect(deflate.status).toBe(415);
  });

  it('answers 401 to a wrong key, 404 to an unknown container header, 415 to another media type', async () => {
    const body = JSON.stringify(jsonRequest([{ traceId: hex(16), spanId: hex(8) }]));
    expect((await post(body, JSON_TYPE, `eg_${'Z'.repeat(43)}`)).status).toBe(401);
    expect((await post(body, JSON_TYPE, null)).status).toBe(401);
    const unknown = await post(body, { ...JSON_TYPE, 'x-evalgate-container': 'nope' });
    expect(unknown.status).toBe(404);
    expect((await post(body, { 'content-type': 'text/plain' })).status).toBe(415);
    const readOnly = await h.key(['logs:read']);
    expect((await post(body, JSON_TYPE, readOnly.key)).status).toBe(403);
  });
});

describe('OTLP ingest: answers and idempotence', () => {
  it('stores a batch sent twice once (spans and task logs), in protobuf and gzip JSON', async () => {
    const traceId = hex(16);
    const request = jsonRequest([
      { traceId, spanId: hex(8) },
      { traceId, spanId: hex(8) },
    ]);
    const before = (await logsOf(h, 'errs')).length;
    for (let i = 0; i < 2; i++) {
      const proto = await post(protobufRequest(request), PROTO_TYPE);
      expect(proto.status).toBe(200);
      expect(proto.headers.get('content-type')).toContain('application/x-protobuf');
      const answer = types.response.toObject(
        types.response.decode(new Uint8Array(await proto.arrayBuffer())),
      );
      expect(answer.partialSuccess).toBeUndefined();
      const zipped = await post(gzipSync(JSON.stringify(request)), {
        ...JSON_TYPE,
        'content-encoding': 'gzip',
      });
      expect(zipped.status).toBe(200);
      expect(await zipped.json()).toEqual({});
      await settled(h);
    }
    const trace = await h.call('GET', `/v1/traces/${traceId}`);
    expect(trace.body.spans).toHaveLength(2);
    expect(trace.body.totals.span_count).toBe(2);
    const list = await h.call('GET', '/v1/traces?container=errs&limit=100');
    expect(list.body.data.find((t: any) => t.id === traceId).totals).toMatchObject({
      span_count: 2,
      model_call_count: 2,
      usage: { input_tokens: 6 },
    });
    const logs = await logsOf(h, 'errs');
    expect(logs.length - before).toBe(2);
    expect(
      logs.filter((l) => l.output === 'yo' && l.input[0].content === 'hi').length,
    ).toBeGreaterThanOrEqual(2);
  });

  it('rejects invalid spans with partial_success and keeps the valid ones', async () => {
    const traceId = hex(16);
    const request = jsonRequest([
      { traceId, spanId: hex(8) },
      { traceId: '00'.repeat(16), spanId: hex(8) },
      { traceId, spanId: 'abc' },
    ]);
    const res = await post(JSON.stringify(request), JSON_TYPE);
    expect(res.status).toBe(200);
    const body = (await res.json()) as { partialSuccess: { rejectedSpans: string; errorMessage: string } };
    expect(Number(body.partialSuccess.rejectedSpans)).toBe(2);
    expect(body.partialSuccess.errorMessage).toMatch(/trace id|span id/);
    // A resource naming an unknown container: its spans are rejected, the request is not.
    const named = jsonRequest([{ traceId: hex(16), spanId: hex(8) }], { 'evalgate.container': 'missing' });
    const proto = await post(protobufRequest(named), PROTO_TYPE);
    const answer = types.response.toObject(types.response.decode(new Uint8Array(await proto.arrayBuffer())), {
      longs: Number,
    });
    expect(answer.partialSuccess).toMatchObject({ rejectedSpans: 1 });
    expect(answer.partialSuccess.errorMessage).toMatch(/missing/);
    const trace = await h.call('GET', `/v1/traces/${traceId}`);
    expect(trace.body.spans).toHaveLength(1);
  });
});

describe('OTLP ingest: media types and timestamps', () => {
  it('takes application/protobuf as it takes application/x-protobuf, answering in the same type', async () => {
    const traceId = hex(16);
    const res = await post(protobufRequest(jsonRequest([{ traceId, spanId: hex(8) }])), {
      ...PROTO_TYPE,
      'content-type': 'application/protobuf',
    });
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toContain('application/protobuf');
    const answer = types.response.toObject(types.response.decode(new Uint8Array(await res.arrayBuffer())));
    expect(answer.partialSuccess).toBeUndefined();
    await settled(h);
    expect((await h.call('GET', `/v1/traces/${traceId}`)).body.spans).toHaveLength(1);
  });

  it('rejects spans stamped negative or more than a day ahead, with the reason, keeping the rest', async () => {
    const traceId = hex(16);
    const request = jsonRequest([
      { traceId, spanId: hex(8) },
      { traceId, spanId: hex(8) },
      { traceId, spanId: hex(8) },
      { traceId, spanId: hex(8) },
    ]);
    const spans = request.resourceSpans[0]!.scopeSpans[0]!.spans as Record<string, unknown>[];
    const twoDaysAhead = `${BigInt(Date.now() + 2 * 86_400_000) * 1_000_000n}`;
    // "-5" arrives as 2^64 − 5 (fixed64): the year 2554 before this bound.
    spans[1]!.startTimeUnixNano = '-5';
    spans[2]!.startTimeUnixNano = twoDaysAhead;
    spans[3]!.endTimeUnixNano = '18446744073709551611';
    for (const [body, type] of [
      [JSON.stringify(request), JSON_TYPE],
      [protobufRequest(request), PROTO_TYPE],
    ] as const) {
      const res = await post(body, type);
      expect(res.status).toBe(200);
      const answer =
        type === JSON_TYPE
          ? ((await res.json()) as any)
          : types.response.toObject(types.response.decode(new Uint8Array(await res.arrayBuffer())), {
              longs: String,
            });
      expect(String(answer.partialSuccess.rejectedSpans)).toBe('3');
      expect(answer.partialSuccess.errorMessage).toContain('start time is negative (before 1970-01-01)');
      expect(answer.partialSuccess.errorMessage).toContain('start time is more than a day ahead');
      expect(answer.partialSuccess.errorMessage).toContain('end time is negative');
    }
    await settled(h);
    const trace = await h.call('GET', `/v1/traces/${traceId}`);
    expect(trace.body.spans).toHaveLength(1);
    const list = await h.call('GET', '/v1/traces?limit=1');
    expect(list.body.data[0].started_at < '2100').toBe(true);
  });
});
