import { randomBytes } from 'node:crypto';
import { gzipSync } from 'node:zlib';
import type protobuf from 'protobufjs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Harness, startHarness } from '../helpers/harness.js';
import { otlpTypes } from '../helpers/otlp-proto.js';
import { logsOf, settled } from './helpers.js';

/**
 * `POST /v1/logs` with raw OTLP bodies: GenAI events as log records join their span's task log (both
 * event-name forms, the ≥ 1.37 details event), retries store nothing twice, another project's records
 * never reach this project's calls, and bad input answers 400/401/403/413/415 like `/v1/traces`.
 */
let h: Harness;
let types: { request: protobuf.Type; response: protobuf.Type; status: protobuf.Type };

beforeAll(async () => {
  h = await startHarness({ env: { EVALGATE_BODY_LIMIT: String(256 * 1024), EVALGATE_LOG_FLUSH_MS: '50' } });
  expect((await h.call('POST', '/v1/containers', { body: { label: 'lg' } })).status).toBe(201);
  const t = otlpTypes();
  types = { request: t.logsRequest, response: t.logsResponse, status: t.status };
});
afterAll(async () => {
  await h.close();
});

const hex = (n: number) => randomBytes(n).toString('hex');
const nowNs = () => `${BigInt(Date.now()) * 1_000_000n}`;
const str = (v: string) => ({ stringValue: v });

/** A model-call span that carries no content (its emitter sends the messages as log records). */
async function bareSpan(traceId: string, spanId: string, key = h.admin.key): Promise<void> {
  const res = await fetch(`${h.url}/v1/traces`, {
    method: 'POST',
    headers: {
      authorization: `Bearer ${key}`,
      'content-type': 'application/json',
      'x-evalgate-container': 'lg',
    },
    body: JSON.stringify({
      resourceSpans: [
        {
          resource: { attributes: [{ key: 'service.name', value: str('raw') }] },
          scopeSpans: [
            {
              scope: { name: '@opentelemetry/instrumentation-openai' },
              spans: [
                {
                  traceId,
                  spanId,
                  name: 'chat gpt-4o-mini',
                  kind: 3,
                  startTimeUnixNano: nowNs(),
                  endTimeUnixNano: nowNs(),
                  attributes: [
                    { key: 'gen_ai.operation.name', value: str('chat') },
                    { key: 'gen_ai.request.model', value: str('gpt-4o-mini') },
                    { key: 'gen_ai.system', value: str('openai') },
                    { key: 'gen_ai.usage.input_tokens', value: { intValue: '7' } },
                    { key: 'gen_ai.usage.output_tokens', value: { intValue: '2' } },
                  ],
                },
              ],
            },
          ],
        },
      ],
    }),
  });
  expect(res.status, await res.text()).toBe(200);
}

type Record = {
  traceId?: string;
  spanId?: string;
  eventName?: string;
  attributes?: { key: string; value: unknown }[];
  body?: unknown;
};

/** An OTLP/JSON logs request with these records. */
function logsRequest(records: Record[]) {
  return {
    resourceLogs: [
      {
        resource: { attributes: [{ key: 'service.name', value: str('raw') }] },
        scopeLogs: [
          {
            scope: { name: '@opentelemetry/instrumentation-openai' },
            logRecords: records.map((r) => ({ timeUnixNano: nowNs(), severityNumber: 9, ...r })),
          },
        ],
      },
    ],
  };
}

/** The instrumentation's records for one call: the name as attribute (older form) or as event_name. */
function callRecords(traceId: string, spanId: string, question: string, answer: string): Record[] {
  return [
    {
      traceId,
      spanId,
      attributes: [{ key: 'event.name', value: str('gen_ai.user.message') }],
      body: { kvlistValue: { values: [{ key: 'content', value: str(question) }] } },
    },
    {
      traceId,
      spanId,
      eventName: 'gen_ai.choice',
      body: {
        kvlistValue: {
          values: [
            { key: 'finish_reason', value: str('stop') },
            { key: 'index', value: { intValue: '0' } },
            { key: 'message', value: { kvlistValue: { values: [{ key: 'content', value: str(answer) }] } } },
          ],
        },
      },
    },
  ];
}

/** The protobuf form of a JSON request (ids as bytes). */
function protobufOf(json: ReturnType<typeof logsRequest>): Uint8Array {
  const copy = structuredClone(json) as any;
  for (const rl of copy.resourceLogs)
    for (const sl of rl.scopeLogs)
      for (const r of sl.logRecords) {
        if (r.traceId) r.traceId = Buffer.from(r.traceId, 'hex');
        if (r.spanId) r.spanId = Buffer.from(r.spanId, 'hex');
      }
  return types.request.encode(types.request.fromObject(copy)).finish();
}

async function post(body: string | Uint8Array, headers: { [k: string]: string }, key?: string | null) {
  return fetch(`${h.url}/v1/logs`, {
    method: 'POST',
    headers: { ...(key === null ? {} : { authorization: `Bearer ${key ?? h.admin.key}` }), ...headers },
    body,
  });
}

const JSON_TYPE = { 'content-type': 'application/json' };
const PROTO_TYPE = { 'content-type': 'application/x-protobuf' };

async function logBySpan(traceId: string): Promise<any> {
  await settled(h);
  const trace = await h.call('GET', `/v1/traces/${traceId}`);
  expect(trace.status, trace.text).toBe(200);
  const id = trace.body.spans.find((s: any) => s.model_call)?.model_call.task_log_id;
  const log = (await logsOf(h, 'lg')).find((l) => l.id === id);
  expect(log, `task log ${id}`).toBeDefined();
  return log;
}

describe('OTLP logs ingest: GenAI events join their call', () => {
  it('events after the span complete its task log; the same batch again changes nothing', async () => {
    const traceId = hex(16);
    const spanId = hex(8);
    await bareSpan(traceId, spanId);
    expect(await logBySpan(traceId)).toMatchObject({ output: null, metadata: { content_captured: false } });
    const request = logsRequest(callRecords(traceId, spanId, 'Capital of Peru?', 'Lima.'));
    for (let i = 0; i < 2; i++) {
      const res = await post(protobufOf(request), PROTO_TYPE);
      expect(res.status).toBe(200);
      expect(res.headers.get('content-type')).toContain('application/x-protobuf');
      const answer = types.response.toObject(types.response.decode(new Uint8Array(await res.arrayBuffer())));
      expect(answer.partialSuccess).toBeUndefined();
      const zipped = await post(gzipSync(JSON.stringify(request)), {
        ...JSON_TYPE,
        'content-encoding': 'gzip',
      });
      expect(zipped.status).toBe(200);
      expect(await zipped.json()).toEqual({});
    }
    const log = await logBySpan(traceId);
    expect(log).toMatchObject({
      model: 'gpt-4o-mini',
      input: [{ role: 'user', content: 'Capital of Peru?' }],
      output: 'Lima.',
      usage: { prompt_tokens: 7, completion_tokens: 2 },
      metadata: { content_captured: true },
    });
    const stored = await h.services.db
      .selectFrom('span_log_events')
      .select('event_key')
      .where('trace_id', '=', traceId)
      .execute();
    expect(stored).toHaveLength(2);
  });

  it('events before the span, and the ≥ 1.37 details event, land on the task log written later', async () => {
    const traceId = hex(16);
    const spanId = hex(8);
    const details: Record = {
      traceId,
      spanId,
      eventName: 'gen_ai.client.inference.operation.details',
      attributes: [
        {
          key: 'gen_ai.input.messages',
          value: str('[{"role":"user","parts":[{"type":"text","content":"hi"}]}]'),
        },
        {
          key: 'gen_ai.output.messages',
          value: str('[{"role":"assistant","parts":[{"type":"text","content":"hello"}]}]'),
        },
      ],
    };
    expect((await post(JSON.stringify(logsRequest([details])), JSON_TYPE)).status).toBe(200);
    await bareSpan(traceId, spanId);
    expect(await logBySpan(traceId)).toMatchObject({
      input: [{ role: 'user', content: 'hi' }],
      output: 'hello',
      metadata: { content_captured: true },
    });
  });

  it('events with capture off (empty bodies) leave the call as not captured', async () => {
    const traceId = hex(16);
    const spanId = hex(8);
    const empty = [
      { traceId, spanId, eventName: 'gen_ai.user.message', body: { kvlistValue: { values: [] } } },
      { traceId, spanId, eventName: 'gen_ai.choice', body: { kvlistValue: { values: [] } } },
    ];
    expect((await post(JSON.stringify(logsRequest(empty)), JSON_TYPE)).status).toBe(200);
    await bareSpan(traceId, spanId);
    expect(await logBySpan(traceId)).toMatchObject({ output: null, metadata: { content_captured: false } });
  });

  it("another project's records never reach this project's call; its key cannot read the trace", async () => {
    const traceId = hex(16);
    const spanId = hex(8);
    await bareSpan(traceId, spanId);
    const other = await h.key(['*'], 'logs-other');
    const res = await post(
      JSON.stringify(logsRequest(callRecords(traceId, spanId, 'q', 'a'))),
      JSON_TYPE,
      other.key,
    );
    expect(res.status).toBe(200);
    expect(await logBySpan(traceId)).toMatchObject({ output: null, metadata: { content_captured: false } });
    expect((await h.call('GET', `/v1/traces/${traceId}`, { key: other.key })).status).toBe(404);
  });

  it('rejects GenAI events without span ids with partial_success; other records are taken', async () => {
    const request = logsRequest([
      {
        eventName: 'gen_ai.user.message',
        body: { kvlistValue: { values: [{ key: 'content', value: str('x') }] } },
      },
      { body: str('an application log line') },
    ]);
    const res = await post(protobufOf(request), PROTO_TYPE);
    expect(res.status).toBe(200);
    const answer = types.response.toObject(types.response.decode(new Uint8Array(await res.arrayBuffer())), {
      longs: Number,
    });
    expect(answer.partialSuccess.rejectedLogRecords).toBe(1);
    expect(answer.partialSuccess.errorMessage).toMatch(/trace and span ids/);
    const json = await post(JSON.stringify(request), JSON_TYPE);
    const body = (await json.json()) as { partialSuccess: { rejectedLogRecords: string } };
    expect(Number(body.partialSuccess.rejectedLogRecords)).toBe(1);
  });
});

describe('OTLP logs ingest: bad input', () => {
  it('answers malformed protobuf and JSON with 400 and a google.rpc.Status body in their encoding', async () => {
    const proto = await post(Buffer.from([0x0a, 0xff, 0xff, 0xff, 0xff, 0x0f, 0x01]), PROTO_TYPE);
    expect(proto.status).toBe(400);
    expect(proto.headers.get('content-type')).toContain('application/x-protobuf');
    const status = types.status.toObject(types.status.decode(new Uint8Array(await proto.arrayBuffer())));
    expect(status.code).toBe(3);
    expect(status.message).toMatch(/ExportLogsServiceRequest/);
    for (const raw of ['{"resourceLogs": [', '[]', '{"resourceLogs": 5}', '"x"']) {
      const res = await post(raw, JSON_TYPE);
      expect(res.status, raw).toBe(400);
      const body = (await res.json()) as { code: number; message: string };
      expect(body.code, raw).toBe(3);
    }
  });

  it('answers 413 to an oversized body and a gzip bomb, 400 to corrupt gzip, 415 to another encoding', async () => {
    const oversized = await post(
      JSON.stringify({ resourceLogs: [], pad: 'x'.repeat(300 * 1024) }),
      JSON_TYPE,
    );
    expect(oversized.status).toBe(413);
    expect(((await oversized.json()) as { code: number }).code).toBe(8);
    const bomb = gzipSync(Buffer.alloc(64 * 1024 * 1024));
    expect((await post(bomb, { ...PROTO_TYPE, 'content-encoding': 'gzip' })).status).toBe(413);
    expect((await post(Buffer.from('not gzip'), { ...JSON_TYPE, 'content-encoding': 'gzip' })).status).toBe(
      400,
    );
    expect((await post('{}', { ...JSON_TYPE, 'content-encoding': 'br' })).status).toBe(415);
  });

  it('answers 401 to a wrong or missing key, 403 to a key without write, 415 to another media type', async () => {
    const body = JSON.stringify(logsRequest([]));
    expect((await post(body, JSON_TYPE, `eg_${'Z'.repeat(43)}`)).status).toBe(401);
    expect((await post(body, JSON_TYPE, null)).status).toBe(401);
    expect((await post(body, { 'content-type': 'text/plain' })).status).toBe(415);
    const readOnly = await h.key(['logs:read']);
    expect((await post(body, JSON_TYPE, readOnly.key)).status).toBe(403);
  });
});
