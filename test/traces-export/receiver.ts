import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { gunzipSync } from 'node:zlib';
import protobuf from 'protobufjs';

/**
 * A test OTLP/HTTP receiver on loopback: `POST /v1/traces` and `POST /v1/logs` with protobuf bodies,
 * decoded with the official opentelemetry-proto definitions (data/otlp-proto, v1.9.0) by
 * protobufjs. In `hang` mode it reads requests and never answers (a collector that stalls).
 */

const PROTO_DIR = path.resolve(__dirname, '../../data/otlp-proto');

let roots: Promise<protobuf.Root> | null = null;
function loadRoot(): Promise<protobuf.Root> {
  roots ??= (async () => {
    const root = new protobuf.Root();
    root.resolvePath = (_origin, target) => path.join(PROTO_DIR, target);
    await root.load(
      [
        'opentelemetry/proto/collector/trace/v1/trace_service.proto',
        'opentelemetry/proto/collector/logs/v1/logs_service.proto',
      ],
      { keepCase: false },
    );
    return root;
  })();
  return roots;
}

export type AttrValue = string | number | boolean | null | AttrValue[] | { [k: string]: AttrValue };

export interface ReceivedSpan {
  traceId: string;
  spanId: string;
  parentSpanId: string;
  name: string;
  kind: number;
  startMs: number;
  endMs: number;
  status: { code: number; message: string };
  attributes: Record<string, AttrValue>;
  resource: Record<string, AttrValue>;
}

export interface ReceivedLog {
  eventName: string;
  traceId: string;
  spanId: string;
  timeMs: number;
  attributes: Record<string, AttrValue>;
  resource: Record<string, AttrValue>;
}

export interface Receiver {
  url: string;
  spans: ReceivedSpan[];
  logs: ReceivedLog[];
  /** Requests received (answered or not), by path. */
  requests: { path: string; headers: IncomingMessage['headers'] }[];
  close(): Promise<void>;
}

const hex = (b: Uint8Array | undefined) => (b ? Buffer.from(b).toString('hex') : '');
const ms = (nanos: unknown) => Number(BigInt(String(nanos ?? 0)) / 1_000_000n);

type AnyValue = Record<string, unknown>;
function anyValue(v: AnyValue | undefined): AttrValue {
  if (!v) return null;
  if ('stringValue' in v) return String(v.stringValue);
  if ('boolValue' in v) return Boolean(v.boolValue);
  if ('intValue' in v) return Number(v.intValue);
  if ('doubleValue' in v) return Number(v.doubleValue);
  if ('arrayValue' in v)
    return ((v.arrayValue as { values?: AnyValue[] }).values ?? []).map((x) => anyValue(x));
  if ('kvlistValue' in v) return attrs((v.kvlistValue as { values?: KeyValue[] }).values);
  return null;
}
type KeyValue = { key: string; value?: AnyValue };
function attrs(list: KeyValue[] | undefined): Record<string, AttrValue> {
  const out: Record<string, AttrValue> = {};
  for (const kv of list ?? []) out[kv.key] = anyValue(kv.value);
  return out;
}

async function readBody(req: IncomingMessage): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const c of req) chunks.push(c as Buffer);
  const body = Buffer.concat(chunks);
  return req.headers['content-encoding'] === 'gzip' ? gunzipSync(body) : body;
}

export async function startReceiver(mode: 'ok' | 'hang' = 'ok'): Promise<Receiver> {
  const root = await loadRoot();
  const traceReq = root.lookupType('opentelemetry.proto.collector.trace.v1.ExportTraceServiceRequest');
  const logsReq = root.lookupType('opentelemetry.proto.collector.logs.v1.ExportLogsServiceRequest');
  const traceRes = root.lookupType('opentelemetry.proto.collector.trace.v1.ExportTraceServiceResponse');
  const logsRes = root.lookupType('opentelemetry.proto.collector.logs.v1.ExportLogsServiceResponse');
  const spans: ReceivedSpan[] = [];
  const logs: ReceivedLog[] = [];
  const requests: Receiver['requests'] = [];
  const server: Server = createServer((req, res) => {
    requests.push({ path: req.url ?? '', headers: req.headers });
    void readBody(req).then((body) => {
      if (mode === 'hang') return;
      const opts = { longs: String, defaults: false, arrays: true };
      if (req.url === '/v1/traces') {
        const msg = traceReq.toObject(traceReq.decode(body), opts) as {
          resourceSpans: { resource?: { attributes?: KeyValue[] }; scopeSpans: { spans: AnyValue[] }[] }[];
        };
        for (const rs of msg.resourceSpans) {
          const resource = attrs(rs.resource?.attributes);
          for (const ss of rs.scopeSpans)
            for (const s of ss.spans) {
              const status = (s.status ?? {}) as { code?: number; message?: string };
              spans.push({
                traceId: hex(s.traceId as Uint8Array),
                spanId: hex(s.spanId as Uint8Array),
                parentSpanId: hex(s.parentSpanId as Uint8Array | undefined),
                name: String(s.name),
                kind: Number(s.kind ?? 0),
                startMs: ms(s.startTimeUnixNano),
                endMs: ms(s.endTimeUnixNano),
                status: { code: status.code ?? 0, message: status.message ?? '' },
                attributes: attrs(s.attributes as KeyValue[]),
                resource,
              });
            }
        }
        res.writeHead(200, { 'content-type': 'application/x-protobuf' });
        res.end(traceRes.encode(traceRes.create({})).finish());
        return;
      }
      if (req.url === '/v1/logs') {
        const msg = logsReq.toObject(logsReq.decode(body), opts) as {
          resourceLogs: { resource?: { attributes?: KeyValue[] }; scopeLogs: { logRecords: AnyValue[] }[] }[];
        };
        for (const rl of msg.resourceLogs) {
          const resource = attrs(rl.resource?.attributes);
          for (const sl of rl.scopeLogs)
            for (const l of sl.logRecords)
              logs.push({
                eventName: String(l.eventName ?? ''),
                traceId: hex(l.traceId as Uint8Array),
                spanId: hex(l.spanId as Uint8Array),
                timeMs: ms(l.timeUnixNano),
                attributes: attrs(l.attributes as KeyValue[]),
                resource,
              });
        }
        res.writeHead(200, { 'content-type': 'application/x-protobuf' });
        res.end(logsRes.encode(logsRes.create({})).finish());
        return;
      }
      res.writeHead(404).end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    spans,
    logs,
    requests,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
