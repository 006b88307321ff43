import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { Kysely } from 'kysely';
import { Type } from 'typebox';
import { CONTENT_PERMISSION } from '../auth/content.js';
import { principalOf } from '../auth/guard.js';
import type { Database } from '../db/schema.js';
import { ErrorEnvelope, pageOf, responses } from '../http/schemas.js';
import { ApiError } from '../shared/errors.js';
import { bodyEncoding, OtlpBody, OtlpBodyError, receiveBody } from './otlp/body.js';
import type { Encoding, OtlpRequests } from './otlp/decode.js';
import { decodeSmall, INLINE_BYTES, openBodyJob } from './otlp/decode-pool.js';
import { type OtlpInflight, RETRY_AFTER_S } from './otlp/inflight.js';
import type { OtlpLimits, OtlpSignal } from './otlp/limits.js';
import { encodeLogsResponse } from './otlp/logs-proto.js';
import { encodeResponse, encodeStatus, RPC_CODES } from './otlp/proto.js';
import { getTrace, listTraces } from './reads.js';
import { CONTAINER_ATTRIBUTE, type IngestResult, type TraceService, TraceStoreBusyError } from './service.js';
import { ListTracesQuery, Trace, TraceIdParam, TraceList } from './types.js';

/** What the trace routes need. */
export interface TracePorts {
  db: Kysely<Database>;
  store: TraceService;
  /** Largest export request, in bytes, before and after decompression. */
  bodyLimit: number;
  /** What one export request may hold (checked before it is decoded). */
  limits: OtlpLimits;
  /** How long a request of spans may wait for room to free in the trace store's buffer before a 503. */
  writeWaitMs: number;
  /** The export body bytes in flight across requests, bounded (429 past it). */
  inflight: OtlpInflight;
}

const tags = ['traces'];
const PROTOBUF = 'application/x-protobuf';
/** OTLP/HTTP allows both names of the protobuf media type; the answer names the one the request did. */
const PROTOBUF_TYPES = [PROTOBUF, 'application/protobuf'] as const;

function contentTypeOf(req: FastifyRequest, as: Encoding): string {
  if (as === 'json') return 'application/json; charset=utf-8';
  return req.mediaType === 'application/protobuf' ? 'application/protobuf' : PROTOBUF;
}
const CONTAINER_HEADER = 'x-evalgate-container';

const RpcStatus = Type.Object(
  {
    code: Type.Integer({ description: 'google.rpc.Code (3: INVALID_ARGUMENT, 8: RESOURCE_EXHAUSTED)' }),
    message: Type.String(),
    details: Type.Optional(Type.Array(Type.Unknown())),
  },
  { description: "OTLP's error body (google.rpc.Status), in the request's encoding" },
);

/**
 * 429 on the OTLP routes: the key's rate limit (the envelope), export bytes in flight at their bound, or
 * (spans) the trace store's backlog at its bound.
 */
const Busy = Type.Union([ErrorEnvelope, RpcStatus], {
  description:
    "The key's rate limit spent (error envelope, `rate_limit_exceeded`), or the OTLP export bytes in flight at " +
    'EVALGATE_OTLP_MAX_INFLIGHT_BYTES, or (spans) the trace store busy with spans not stored yet ' +
    "(OTLP's google.rpc.Status, code 8); all with Retry-After",
});

const ExportResponse = Type.Object(
  {
    partialSuccess: Type.Optional(
      Type.Object({
        rejectedSpans: Type.Optional(Type.Union([Type.String(), Type.Integer()])),
        errorMessage: Type.Optional(Type.String()),
      }),
    ),
  },
  { description: 'ExportTraceServiceResponse (protobuf for a protobuf request)' },
);

const ExportBody = Type.Unknown({
  description:
    'ExportTraceServiceRequest (opentelemetry-proto), protobuf or OTLP/JSON; Content-Encoding gzip allowed',
});

/** The request's Content-Length, when it states one. */
function contentLengthOf(req: FastifyRequest): number | undefined {
  const raw = req.headers['content-length'];
  return raw !== undefined && /^\d+$/.test(raw) ? Number(raw) : undefined;
}

function sendStatus(reply: FastifyReply, as: Encoding, e: OtlpBodyError): FastifyReply {
  const code =
    e.status === 413 || e.status === 429 ? RPC_CODES.RESOURCE_EXHAUSTED : RPC_CODES.INVALID_ARGUMENT;
  // A body left half-read (past the limit) is not waited for: the connection ends with this answer. A body
  // refused unread for a while (429) with a Content-Length (within the limit) is read and discarded by
  // Node after the answer instead, on a connection kept open: closed under a client still sending, it
  // would meet a reset before the answer, and an exporter would see a broken connection, not the 429.
  const drained = e.status === 429 && contentLengthOf(reply.request) !== undefined;
  if (!reply.request.raw.complete && !drained) reply.header('connection', 'close');
  if (e.retryAfterS !== undefined) reply.header('retry-after', String(e.retryAfterS));
  return reply
    .code(e.status)
    .type(contentTypeOf(reply.request, as))
    .send(encodeStatus(code, e.message, as));
}

/** Aborts when the client leaves before its answer is sent. */
function clientLeft(reply: FastifyReply): AbortSignal {
  const left = new AbortController();
  reply.raw.once('close', () => {
    if (!reply.raw.writableFinished) left.abort(new OtlpBodyError(400, 'The client left'));
  });
  if (reply.request.raw.socket?.destroyed) left.abort(new OtlpBodyError(400, 'The client left'));
  return left.signal;
}

/**
 * An OTLP export request's body in the encoding its content type names, read within the limit, gunzipped,
 * walked within the limits and decoded; or, when it cannot be, OTLP's error status already sent (400,
 * 413, 429) and undefined answered (415 is thrown). The request holds its share of the in-flight bound
 * until its answer is sent: past the bound it is answered 429 before its body is read. A body past
 * INLINE_BYTES is never held here: its chunks go to a decode thread as they arrive, and the thread
 * gunzips and decodes it.
 */
async function readExport<S extends OtlpSignal>(
  req: FastifyRequest,
  reply: FastifyReply,
  ports: TracePorts,
  signal: S,
  left: AbortSignal,
): Promise<{ as: Encoding; request: OtlpRequests[S] } | undefined> {
  const limit = ports.bodyLimit;
  const as: Encoding = (PROTOBUF_TYPES as readonly (string | undefined)[]).includes(req.mediaType)
    ? 'protobuf'
    : 'json';
  if (!(req.body instanceof OtlpBody)) {
    sendStatus(reply, as, new OtlpBodyError(400, 'Expected a body'));
    return undefined;
  }
  try {
    const encoding = bodyEncoding(req.headers['content-encoding']);
    const contentLength = contentLengthOf(req);
    if (contentLength !== undefined && contentLength > limit) {
      throw new OtlpBodyError(413, `The export request exceeds ${limit} bytes`);
    }
    const hold = ports.inflight.admit(contentLength ?? 0);
    if (hold === null) {
      const busy = `The trace store is busy with other exports; retry after ${RETRY_AFTER_S} s`;
      throw new OtlpBodyError(429, busy, RETRY_AFTER_S);
    }
    reply.raw.once('close', () => hold.release());
    // A client gone before this point: its answer's close has passed, and nothing is held for it.
    if (reply.raw.destroyed || req.raw.socket?.destroyed) hold.release();
    const onBytes = (bytes: number) => hold.atLeast(bytes);
    const spec = { signal, as, encoding, limit, limits: ports.limits, onInflated: onBytes };
    const received = await receiveBody(req.body.stream, {
      limit,
      inlineBytes: INLINE_BYTES,
      contentLength,
      open: () => openBodyJob(spec, left),
      onBytes,
    });
    if (received.sink !== null) return { as, request: await received.sink.end() };
    return { as, request: await decodeSmall(spec, received.body, left) };
  } catch (err) {
    if (!(err instanceof OtlpBodyError)) throw err;
    if (err.status === 415) throw new ApiError('unsupported_media_type', err.message);
    sendStatus(reply, as, err);
    return undefined;
  }
}

/** The answer, already encoded (protobuf or OTLP/JSON): sent as it is, past the response schema. */
function sendEncoded(reply: FastifyReply, as: Encoding, bytes: Uint8Array | string): FastifyReply {
  return reply.code(200).type(contentTypeOf(reply.request, as)).send(bytes);
}

/** `POST /v1/traces`: the export read and decoded, its spans taken; 429 when the trace store is too busy. */
async function exportSpans(req: FastifyRequest, reply: FastifyReply, ports: TracePorts): Promise<void> {
  const { projectId } = principalOf(req);
  const left = clientLeft(reply);
  const read = await readExport(req, reply, ports, 'spans', left);
  if (read === undefined) return;
  const { as, request } = read;
  const header = req.headers[CONTAINER_HEADER];
  const ref = typeof header === 'string' && header.trim() !== '' ? header.trim() : null;
  let result: IngestResult;
  try {
    result = await ports.store.ingest(projectId, ref, request, { waitMs: ports.writeWaitMs, signal: left });
  } catch (err) {
    if (!(err instanceof TraceStoreBusyError)) throw err;
    ports.inflight.refused();
    const busy = `${err.message}; retry after ${RETRY_AFTER_S} s`;
    sendStatus(reply, as, new OtlpBodyError(429, busy, RETRY_AFTER_S));
    return;
  }
  const partial =
    result.rejected > 0 ? { rejectedSpans: result.rejected, errorMessage: result.errors.join('; ') } : null;
  sendEncoded(reply, as, encodeResponse(partial, as));
}

/** An export body's media types in the OpenAPI document: protobuf under both names, and JSON. */
function bodyContent(schema: unknown): Record<string, { schema: unknown }> {
  return Object.fromEntries([...PROTOBUF_TYPES, 'application/json'].map((t) => [t, { schema }]));
}

const LogsExportResponse = Type.Object(
  {
    partialSuccess: Type.Optional(
      Type.Object({
        rejectedLogRecords: Type.Optional(Type.Union([Type.String(), Type.Integer()])),
        errorMessage: Type.Optional(Type.String()),
      }),
    ),
  },
  { description: 'ExportLogsServiceResponse (protobuf for a protobuf request)' },
);

const LogsExportBody = Type.Unknown({
  description:
    'ExportLogsServiceRequest (opentelemetry-proto), protobuf or OTLP/JSON; Content-Encoding gzip allowed',
});

/**
 * `POST /v1/traces` (OTLP/HTTP, the path exporters append to OTEL_EXPORTER_OTLP_ENDPOINT) and the trace
 * store's reads, `GET /v1/traces` and `GET /v1/traces/{trace_id}`.
 */
export const traceRoutes: FastifyPluginAsyncTypebox<{ ports: TracePorts }> = async (app, { ports }) => {
  const { db, store } = ports;
  // Only this plugin's routes take protobuf, and read their JSON themselves (gzip allowed here).
  app.removeAllContentTypeParsers();
  app.addContentTypeParser([...PROTOBUF_TYPES, 'application/json'], (_req, payload, done) =>
    done(null, new OtlpBody(payload)),
  );

  app.post(
    '/v1/traces',
    {
      config: { permission: 'inference:write' },
      schema: {
        tags,
        summary: 'Ingest spans over OTLP/HTTP (protobuf or JSON, gzip allowed)',
        description:
          "Takes OpenTelemetry exporters' batches (OTEL_EXPORTER_OTLP_ENDPOINT set to this server). Spans are " +
          'stored as traces, and each model-call span (GenAI conventions, OpenInference, the AI SDK, ' +
          'OpenLLMetry) also becomes a task log of its container: the resource attribute ' +
          `\`${CONTAINER_ATTRIBUTE}\` names it, else the X-Evalgate-Container header, else the project's ` +
          "`default` container. Answers ExportTraceServiceResponse in the request's encoding, with " +
          'partialSuccess for rejected spans; a malformed body answers 400, and one over the body limit or ' +
          'past a limit on spans, attributes, events, nesting or value size 413, with ' +
          "OTLP's error body (google.rpc.Status); 429 with Retry-After, and the same error body, when the " +
          'export bodies in flight reach EVALGATE_OTLP_MAX_INFLIGHT_BYTES, or when the spans of other exports ' +
          "not stored yet and this one would pass the trace store's bound (EVALGATE_LOG_MAX_BUFFERED; " +
          'exporters retry it, and nothing of the request was taken); 503 only ' +
          'when the trace store has no room within ' +
          'EVALGATE_OTLP_WRITE_WAIT_MS or its spool cannot be written. A 200 means every span taken is ' +
          'in the spool file in the data dir (stored after a kill of the process by its next start).',
        headers: Type.Object({
          'x-evalgate-container': Type.Optional(Type.String({ description: 'Container id or label' })),
        }),
        body: { content: bodyContent(ExportBody) },
        response: {
          ...responses({ 200: ExportResponse }, 404, 413, 415, 422),
          400: RpcStatus,
          413: RpcStatus,
          429: Busy,
        },
      },
    },
    async (req, reply) => {
      await exportSpans(req, reply, ports);
      return reply;
    },
  );

  app.post(
    '/v1/logs',
    {
      config: { permission: 'inference:write' },
      schema: {
        tags,
        summary: 'Ingest GenAI events sent as log records over OTLP/HTTP (protobuf or JSON, gzip allowed)',
        description:
          "Takes OpenTelemetry log exporters' batches (OTEL_EXPORTER_OTLP_ENDPOINT set to this server). " +
          'Records that are GenAI events (`gen_ai.system.message`, `gen_ai.user.message`, ' +
          '`gen_ai.assistant.message`, `gen_ai.tool.message`, `gen_ai.choice`, ' +
          '`gen_ai.client.inference.operation.details`; the name in event_name or the `event.name` ' +
          "attribute) give their span's model call its messages: input, output and tool calls land on the " +
          "span's task log whether the span arrives before or after them. Other records are accepted and " +
          'not kept. A GenAI event without trace and span ids is rejected (partialSuccess). Answers ' +
          "ExportLogsServiceResponse in the request's encoding; a malformed body answers 400, and one " +
          'over the body limit or past a limit on records, attributes, nesting or value size 413, with ' +
          "OTLP's error body (google.rpc.Status); 429 with Retry-After, and the same error body, when the " +
          'export bodies in flight reach EVALGATE_OTLP_MAX_INFLIGHT_BYTES (exporters retry it).',
        body: {
          content: bodyContent(LogsExportBody),
        },
        response: {
          ...responses({ 200: LogsExportResponse }, 404, 413, 415, 422),
          400: RpcStatus,
          413: RpcStatus,
          429: Busy,
        },
      },
    },
    async (req, reply) => {
      const { projectId } = principalOf(req);
      const read = await readExport(req, reply, ports, 'logs', clientLeft(reply));
      if (read === undefined) return reply;
      const { as, request } = read;
      const result = await store.ingestLogs(projectId, request);
      const partial =
        result.rejected > 0
          ? { rejectedLogRecords: result.rejected, errorMessage: result.errors.join('; ') }
          : null;
      return sendEncoded(reply, as, encodeLogsResponse(partial, as));
    },
  );

  app.get(
    '/v1/traces',
    {
      config: { permission: CONTENT_PERMISSION.trace },
      schema: {
        tags,
        summary: "The project's traces, newest first (filters: container, time, session, model, errors)",
        querystring: ListTracesQuery,
        response: responses({ 200: TraceList }, 404, 422),
      },
    },
    async (req) => {
      await store.flush();
      return listTraces(db, principalOf(req).projectId, req.query, pageOf(req.query));
    },
  );

  app.get(
    '/v1/traces/:trace_id',
    {
      config: { permission: CONTENT_PERMISSION.trace },
      schema: {
        tags,
        summary:
          'One trace: its spans as a tree (timings, attributes, model calls with task log, tokens, cost)',
        params: TraceIdParam,
        response: responses({ 200: Trace }, 404, 422),
      },
    },
    async (req) => {
      await store.flush();
      return getTrace(db, principalOf(req).projectId, req.params.trace_id);
    },
  );
};
