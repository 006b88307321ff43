import type { Socket } from 'node:net';
import type { ConnectionError, FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { isDatabaseUnavailable } from '../db/database.js';
import { ApiError, type ErrorCode, envelopeOf, type ValidationIssue } from '../shared/errors.js';
import { nodeHttp } from '../shared/node-http.js';
import type { RouteDialect } from './request-types.js';
import { toIssues } from './validation.js';

const { maxHeaderSize: defaultMaxHeaderSize, STATUS_CODES } = nodeHttp;

const FASTIFY_CODES: Record<string, ErrorCode> = {
  FST_ERR_CTP_BODY_TOO_LARGE: 'payload_too_large',
  FST_ERR_CTP_INVALID_MEDIA_TYPE: 'unsupported_media_type',
  FST_ERR_CTP_EMPTY_JSON_BODY: 'invalid_json',
  FST_ERR_CTP_INVALID_JSON_BODY: 'invalid_json',
  FST_ERR_CTP_INVALID_CONTENT_LENGTH: 'bad_request',
  FST_ERR_CTP_EMPTY_TYPE: 'unsupported_media_type',
  FST_ERR_CTP_INVALID_TYPE: 'unsupported_media_type',
};

const MESSAGES: Partial<Record<ErrorCode, string>> = {
  payload_too_large: 'Request body is too large',
  unsupported_media_type: 'Unsupported Content-Type; send application/json',
  invalid_json: 'Request body is not valid JSON',
};

const BY_STATUS: Record<number, ErrorCode> = {
  400: 'bad_request',
  404: 'not_found',
  405: 'method_not_allowed',
  413: 'payload_too_large',
  415: 'unsupported_media_type',
  429: 'rate_limit_exceeded',
  503: 'upstream_unavailable',
};

function isFastifyError(err: unknown): err is FastifyError {
  return err instanceof Error && ('code' in err || 'statusCode' in err || 'validation' in err);
}

/** Any thrown value → the one ApiError it means. Unknown failures become a 500 that reveals nothing. */
export function toApiError(err: unknown, requestId: string): ApiError {
  if (err instanceof ApiError) return err;
  if (isFastifyError(err)) {
    if (err.validation) {
      const part = err.validationContext ?? 'body';
      const issues: ValidationIssue[] = toIssues(part, err.validation as Parameters<typeof toIssues>[1]);
      return ApiError.validation(issues);
    }
    const mapped = err.code ? FASTIFY_CODES[err.code] : undefined;
    if (mapped) return new ApiError(mapped, MESSAGES[mapped] ?? err.message);
    // Parse failures of the JSON body carry status 400 but no specific code.
    if (err.statusCode === 400 && (err instanceof SyntaxError || err.name === 'SyntaxError')) {
      return new ApiError('invalid_json', MESSAGES.invalid_json ?? 'Invalid JSON');
    }
    const status = err.statusCode ?? 500;
    const byStatus = BY_STATUS[status];
    if (status < 500 && byStatus) return new ApiError(byStatus, err.message);
    if (status === 400) return new ApiError('bad_request', err.message);
  }
  // The database away (restarting, unreachable, SQLite locked past its busy timeout) is an outage, not a
  // bug: 503 in the envelope, naming the dependency, so that clients retry.
  if (isDatabaseUnavailable(err)) {
    return new ApiError('upstream_unavailable', 'The database is unavailable; try again shortly', {
      dependency: 'database',
      request_id: requestId,
    });
  }
  return new ApiError('internal_error', 'Internal server error', { request_id: requestId });
}

/** An error in the service's envelope (a validation failure as its issues). */
export const errorBody = envelopeOf;

/** A validation failure as OpenAI's SDKs expect it: 400 in the envelope, every problem in the message. */
export function asBadRequest(e: ApiError): ApiError {
  if (e.code !== 'validation_error') return e;
  const problems = e.issues.map((i) => `${i.loc.join('.')}: ${i.msg}`);
  return new ApiError(
    'bad_request',
    `Invalid request: ${problems.join('; ')}`,
    { issues: e.issues },
    [],
    e.headers,
  );
}

/** Per server, the path prefixes whose every error is written in a dialect (see `setPathDialect`). */
const pathDialects = new WeakMap<object, { prefix: string; dialect: RouteDialect }[]>();

/**
 * Writes every error under `prefix` (the path and the paths below it) in `dialect`, also the answers no
 * route gives there (404, 405): a dialect's SDK reads every error of its paths in its own shape.
 */
export function setPathDialect(app: FastifyInstance, prefix: string, dialect: RouteDialect): void {
  const list = pathDialects.get(app.server) ?? [];
  list.push({ prefix, dialect });
  pathDialects.set(app.server, list);
}

/** The dialect a request's errors are written in: its route's, else its path's (undefined: the envelope). */
function dialectOf(request: FastifyRequest): RouteDialect | undefined {
  const own = request.routeOptions.config?.dialect;
  if (own) return own;
  const list = pathDialects.get(request.server.server);
  if (!list) return undefined;
  const path = request.url.split('?')[0] ?? '';
  return list.find(({ prefix }) => path === prefix || path.startsWith(`${prefix}/`))?.dialect;
}

export function sendError(reply: FastifyReply, given: ApiError): FastifyReply {
  const dialect = dialectOf(reply.request);
  const e = dialect === undefined ? given : asBadRequest(given);
  for (const [k, v] of Object.entries(e.headers)) reply.header(k, v);
  // An upload stopped at a limit destroyed its body stream half-read: Node cannot skip the rest of that
  // body to reach a next request, so the connection ends with this answer instead of hanging on. (A body
  // merely left unread, as for a 401, is skipped by Node and the connection kept.)
  const raw = reply.request.raw;
  if (raw.destroyed && !raw.complete) reply.header('connection', 'close');
  // Bodies are serialized here, not by a route's response schema, so the envelope is exact everywhere.
  return reply
    .code(e.status)
    .type('application/json; charset=utf-8')
    .serializer(JSON.stringify)
    .send(dialect ? dialect.errorBody(e) : errorBody(e));
}

/**
 * Fastify's `frameworkErrors` option: failures found while routing, before any hook runs (a path with
 * bad percent-encoding, a path parameter longer than the router's limit), answered with the envelope.
 */
export function frameworkErrorHandler(err: FastifyError, request: FastifyRequest, reply: FastifyReply): void {
  const e =
    err.code === 'FST_ERR_MAX_PARAM_LENGTH'
      ? ApiError.invalid(['path'], 'A path parameter is too long', 'string_too_long')
      : toApiError(err, request.id);
  sendError(reply, e);
}

/** Methods probed for a path that matched no route under the request's method (HEAD answers with GET). */
const PROBED_METHODS = ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS'] as const;

/**
 * A request no route took: 405 `method_not_allowed` with `Allow` when the path is served under other
 * methods, otherwise 404 `not_found`.
 */
function routeNotFound(request: FastifyRequest): ApiError {
  const path = request.url.split('?')[0] ?? request.url;
  const allowed = PROBED_METHODS.filter(
    (method) => method !== request.method && request.server.findRoute({ method, url: request.url }) !== null,
  );
  if (allowed.length > 0) {
    return new ApiError(
      'method_not_allowed',
      `Method ${request.method} is not allowed on ${path}; use ${allowed.join(', ')}`,
      { allowed },
      [],
      { allow: allowed.join(', ') },
    );
  }
  return new ApiError('not_found', `Route ${request.method} ${path} not found`);
}

/**
 * Requests that reach the router after close() began (on a connection already open) are answered at
 * once: 503 in the envelope, or `{"ok":false}` for the health check, so that load balancers drain this
 * process. (Fastify's own answer is a body of its own shape.)
 */
function installClosingAnswer(app: FastifyInstance): void {
  let closing = false;
  app.addHook('preClose', (done) => {
    closing = true;
    done();
  });
  app.addHook('onRequest', (request, reply, done) => {
    if (!closing) return done();
    reply.header('connection', 'close');
    if (request.routeOptions.url === '/healthz') return reply.code(503).send({ ok: false });
    sendError(
      reply,
      new ApiError('upstream_unavailable', 'The server is shutting down; retry the request', {
        reason: 'shutting_down',
      }),
    );
  });
}

export function installErrorHandling(app: FastifyInstance): void {
  app.setErrorHandler((err: unknown, request: FastifyRequest, reply: FastifyReply) => {
    // Fastify parses the body even for a request that matches no route; its failures must not hide the 404.
    if (request.is404) return sendError(reply, routeNotFound(request));
    const e = toApiError(err, request.id);
    if (e.status >= 500 && e.code === 'internal_error') request.log.error({ err }, 'unhandled error');
    return sendError(reply, e);
  });
  app.setNotFoundHandler((request, reply) => sendError(reply, routeNotFound(request)));
  installClosingAnswer(app);
  // An Expect header other than 100-continue: Node would answer 417 with an empty body.
  app.server.on('checkExpectation', (req, res) => {
    const body = JSON.stringify(
      errorBody(
        new ApiError('bad_request', `Unsupported Expect header '${String(req.headers.expect)}'`, {
          reason: 'expectation_failed',
        }),
      ),
    );
    res.writeHead(400, {
      'content-type': 'application/json; charset=utf-8',
      'content-length': Buffer.byteLength(body),
      connection: 'close',
    });
    res.end(body);
  });
}

/**
 * Why Node's HTTP parser refused a connection's request, per parser code: what the client sees in the
 * envelope's message and `details.reason`.
 */
const PARSE_FAILURES: Record<string, [reason: string, message: string]> = {
  HPE_HEADER_OVERFLOW: ['request_header_fields_too_large', 'The request line and headers are too large'],
  HPE_INVALID_HEADER_TOKEN: [
    'invalid_header',
    'A request header has an invalid name or value (control characters are not allowed)',
  ],
  HPE_INVALID_METHOD: ['invalid_method', 'The request method is malformed or unknown'],
  HPE_INVALID_URL: ['invalid_request_target', 'The request target is malformed'],
  HPE_INVALID_VERSION: ['invalid_request_line', 'The request line is malformed'],
  HPE_INVALID_CONSTANT: ['invalid_request_line', 'The request line is malformed'],
  HPE_INVALID_CONTENT_LENGTH: ['invalid_framing', 'The Content-Length header is invalid'],
  HPE_UNEXPECTED_CONTENT_LENGTH: [
    'invalid_framing',
    'Content-Length and Transfer-Encoding must not be sent together',
  ],
  HPE_INVALID_TRANSFER_ENCODING: ['invalid_framing', 'The Transfer-Encoding header is invalid'],
  HPE_INVALID_CHUNK_SIZE: ['invalid_framing', 'A chunk of the chunked body is malformed'],
  HPE_CHUNK_EXTENSIONS_OVERFLOW: ['invalid_framing', 'The chunk extensions are too large'],
  ERR_HTTP_REQUEST_TIMEOUT: ['request_timeout', 'The request was not received in time'],
  ERR_HTTP_HEADERS_TIMEOUT: ['request_timeout', 'The request headers were not received in time'],
};

/** The raw HTTP/1.1 answer to a request Node refused before Fastify saw it: the envelope, then close. */
export function connectionErrorResponse(err: { code?: string }, maxHeaderSize: number): string {
  const [reason, message] = PARSE_FAILURES[err.code ?? ''] ?? ['malformed_request', 'Malformed HTTP request'];
  const details: Record<string, unknown> = { reason };
  if (reason === 'request_header_fields_too_large') details.limit_bytes = maxHeaderSize;
  // Everything the parser refuses is a 400 `bad_request` with the precise reason in details, except a
  // request not received in time: a 408 `request_timeout`, as the request deadlines answer.
  const e =
    reason === 'request_timeout'
      ? new ApiError('request_timeout', message, details)
      : new ApiError('bad_request', message, details);
  return rawErrorResponse(e);
}

/** An error as a whole raw HTTP/1.1 response that closes the connection. */
export function rawErrorResponse(e: ApiError): string {
  const body = JSON.stringify(errorBody(e));
  return (
    `HTTP/1.1 ${e.status} ${STATUS_CODES[e.status]}\r\n` +
    'Content-Type: application/json; charset=utf-8\r\n' +
    `Content-Length: ${Buffer.byteLength(body)}\r\n` +
    'Connection: close\r\n\r\n' +
    body
  );
}

/**
 * Fastify's `clientErrorHandler` option (Node's `clientError` event): a request the HTTP parser refused
 * (headers too large, control characters in a header, a malformed request line or framing, a request
 * not received in time). Answers the envelope unless a response is already under way, then closes.
 */
export function clientErrorHandler(this: FastifyInstance, err: ConnectionError, socket: Socket): void {
  if (err.code === 'ECONNRESET' || socket.destroyed) return;
  this.log.debug({ err }, 'request refused by the HTTP parser');
  // As Node does: never write into a response that has begun.
  const inFlight = (socket as Socket & { _httpMessage?: { headersSent?: boolean } })._httpMessage;
  if (!socket.writable || inFlight?.headersSent) {
    socket.destroy();
    return;
  }
  const ownLimit = (this.server as { maxHeaderSize?: number }).maxHeaderSize;
  socket.end(connectionErrorResponse(err, ownLimit ?? defaultMaxHeaderSize));
  // A client that does not read its answer does not keep the socket.
  setTimeout(() => socket.destroy(), 1000).unref();
}
