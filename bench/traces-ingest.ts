/**
 * bench:traces' export requests: OTLP ExportTraceServiceRequests of `perRequest` spans in traces of 10 (a
 * root `invoke_agent`, `calls` GenAI ≥ 1.37 `chat` calls with messages and usage — five by default — and
 * `execute_tool` spans for the rest),
 * encoded as an exporter would (protobuf with the official definitions, or OTLP/JSON with hex ids), and a
 * sender that posts them with a few concurrent clients, retrying a 503 (the store's bound) as exporters do.
 */
import { randomBytes } from 'node:crypto';
import path from 'node:path';
import protobuf from 'protobufjs';
import { ROOT } from './lib.js';

const SPANS_PER_TRACE = 10;
const CONCURRENCY = 4;

const hex = (n: number) => randomBytes(n).toString('hex');

const kv = (key: string, value: Record<string, unknown>) => ({ key, value });

function request(n: number, calls: number) {
  const now = BigInt(Date.now()) * 1_000_000n;
  const spans = [];
  let traceId = '';
  let root = '';
  for (let i = 0; i < n; i++) {
    const isRoot = i % SPANS_PER_TRACE === 0;
    if (isRoot) {
      traceId = hex(16);
      root = hex(8);
    }
    // Model calls at the odd places of the trace, the first `calls` of them.
    const place = i % SPANS_PER_TRACE;
    const isCall = !isRoot && place % 2 === 1 && place < 2 * calls;
    spans.push({
      traceId,
      spanId: isRoot ? root : hex(8),
      ...(isRoot ? {} : { parentSpanId: root }),
      name: isRoot ? 'invoke_agent' : isCall ? 'chat gpt-4o-mini' : 'execute_tool lookup',
      kind: isCall ? 3 : 1,
      startTimeUnixNano: String(now + BigInt(i) * 1000n),
      endTimeUnixNano: String(now + BigInt(i) * 1000n + 5_000_000n),
      attributes: isCall
        ? [
            kv('gen_ai.operation.name', { stringValue: 'chat' }),
            kv('gen_ai.provider.name', { stringValue: 'openai' }),
            kv('gen_ai.request.model', { stringValue: 'gpt-4o-mini' }),
            kv('gen_ai.usage.input_tokens', { intValue: '120' }),
            kv('gen_ai.usage.output_tokens', { intValue: '30' }),
            kv('gen_ai.input.messages', {
              stringValue:
                '[{"role":"user","parts":[{"type":"text","content":"What is the order status?"}]}]',
            }),
            kv('gen_ai.output.messages', {
              stringValue: '[{"role":"assistant","parts":[{"type":"text","content":"It shipped today."}]}]',
            }),
          ]
        : [
            kv('gen_ai.operation.name', { stringValue: isRoot ? 'invoke_agent' : 'execute_tool' }),
            ...(isRoot ? [] : [kv('gen_ai.tool.name', { stringValue: 'lookup' })]),
          ],
      status: {},
    });
  }
  return {
    resourceSpans: [
      {
        resource: { attributes: [kv('service.name', { stringValue: 'bench' })] },
        scopeSpans: [{ scope: { name: 'bench', version: '1.0.0' }, spans }],
      },
    ],
  };
}

type Json = ReturnType<typeof request>;

function protobufEncoder(): (json: Json) => Uint8Array {
  const root = new protobuf.Root();
  const dir = path.join(ROOT, 'data/otlp-proto');
  root.resolvePath = (_o, t) => (t.startsWith('google/protobuf/') ? t : path.join(dir, t));
  root.loadSync('opentelemetry/proto/collector/trace/v1/trace_service.proto');
  const type = root.lookupType('opentelemetry.proto.collector.trace.v1.ExportTraceServiceRequest');
  return (json) => {
    const spans = json.resourceSpans[0]!.scopeSpans[0]!.spans.map((s) => ({
      ...s,
      traceId: Buffer.from(s.traceId, 'hex'),
      spanId: Buffer.from(s.spanId, 'hex'),
      ...(s.parentSpanId ? { parentSpanId: Buffer.from(s.parentSpanId, 'hex') } : {}),
    }));
    const copy = {
      resourceSpans: [
        { ...json.resourceSpans[0], scopeSpans: [{ ...json.resourceSpans[0]!.scopeSpans[0], spans }] },
      ],
    };
    return type.encode(type.fromObject(copy)).finish();
  };
}

/** A maker of one round's bodies (`spans` spans, fresh ids each call). */
export function encodeBodies(
  format: 'protobuf' | 'json',
  spans: number,
  perRequest: number,
  calls = 5,
): (round: number) => (Uint8Array | string)[] {
  const encode = format === 'protobuf' ? protobufEncoder() : (json: Json) => JSON.stringify(json);
  return () => {
    const out: (Uint8Array | string)[] = [];
    for (let i = 0; i < spans; i += perRequest)
      out.push(encode(request(Math.min(perRequest, spans - i), calls)));
    return out;
  };
}

/** Posts every body to `/v1/traces` from 4 concurrent clients; a 503 is retried after 50 ms. */
export async function sendBodies(
  url: string,
  auth: Record<string, string>,
  format: 'protobuf' | 'json',
  bodies: (Uint8Array | string)[],
): Promise<{ retried: number }> {
  let next = 0;
  let retried = 0;
  const headers = {
    ...auth,
    'content-type': format === 'protobuf' ? 'application/x-protobuf' : 'application/json',
  };
  const client = async () => {
    while (next < bodies.length) {
      const body = bodies[next++]!;
      for (;;) {
        const res = await fetch(`${url}/v1/traces`, { method: 'POST', headers, body });
        await res.arrayBuffer();
        if (res.status === 200) break;
        if (res.status !== 503) throw new Error(`ingest answered ${res.status}`);
        retried++;
        await new Promise((r) => setTimeout(r, 50));
      }
    }
  };
  await Promise.all(Array.from({ length: CONCURRENCY }, client));
  return { retried };
}
