import type { Server } from 'node:http';
import type { Socket } from 'node:net';
import type { FastifyInstance } from 'fastify';
import { ApiError } from '../shared/errors.js';
import { errorBody, rawErrorResponse } from './error-handler.js';
import { NDJSON_TYPES } from './uploads.js';

export interface RequestLimits {
  /** Time from the connection (or the previous request) to the end of the headers. */
  headersTimeoutMs: number;
  /** Time from the end of the headers to the end of a JSON body. */
  bodyTimeoutMs: number;
  /** The same for streamed uploads (JSON-lines datasets and task log imports). */
  uploadTimeoutMs: number;
  /** Open connections of this process; one past it is answered 503 and closed. */
  maxConnections: number;
}

/** Whether a request announces a body (GET and friends without one are never timed: SSE streams last). */
function hasBody(headers: Record<string, string | string[] | undefined>): boolean {
  if (headers['transfer-encoding'] !== undefined) return true;
  const length = Number(headers['content-length'] ?? 0);
  return Number.isFinite(length) && length > 0;
}

/**
 * Bounds how long a request may take to arrive and how many connections one process holds:
 * - headers: Node's `headersTimeout` (answered 408 in the envelope by the client error handler);
 * - body: a timer from the end of the headers to the end of the body; a body still arriving when it
 *   fires is answered 408 `request_timeout` in the envelope and its connection closed;
 * - connections: past `maxConnections`, a new connection is answered 503 `too_many_connections` and
 *   closed at once, before anything is read from it.
 * This sets the server's; `installBodyDeadline` adds the body's.
 */
export function installRequestDeadlines(app: FastifyInstance, limits: RequestLimits): void {
  const http: Server = app.server;
  http.headersTimeout = limits.headersTimeoutMs;
  // Node's own whole-request deadline stays as a backstop behind ours (checked every 30 s by Node).
  http.requestTimeout = limits.headersTimeoutMs + Math.max(limits.bodyTimeoutMs, limits.uploadTimeoutMs);

  let open = 0;
  http.prependListener('connection', (socket: Socket) => {
    open += 1;
    socket.once('close', () => {
      open -= 1;
    });
    if (open > limits.maxConnections) {
      const e = new ApiError(
        'too_many_connections',
        'The server holds as many connections as it accepts; retry shortly',
        { limit: limits.maxConnections },
      );
      socket.end(rawErrorResponse(e));
      setTimeout(() => socket.destroy(), 1000).unref();
    }
  });
}

/**
 * The body's deadline (see `installRequestDeadlines`), a hook of each instance: also of one reached
 * through another's HTTP server (src/http/lazy-prefix.ts), whose server limits are that server's.
 */
export function installBodyDeadline(app: FastifyInstance, limits: RequestLimits): void {
  app.addHook('onRequest', (request, reply, done) => {
    const raw = request.raw;
    if (raw.complete || !hasBody(raw.headers)) return done();
    const type = String(raw.headers['content-type'] ?? '')
      .split(';')[0]!
      .trim()
      .toLowerCase();
    const upload = NDJSON_TYPES.includes(type);
    const ms = upload ? limits.uploadTimeoutMs : limits.bodyTimeoutMs;
    const timer = setTimeout(() => {
      if (raw.complete) return;
      const socket = raw.socket;
      const e = new ApiError(
        'request_timeout',
        `The request body did not arrive within ${ms / 1000} s of its headers`,
        { reason: 'body_timeout', timeout_ms: ms },
      );
      request.log.debug({ timeout_ms: ms }, 'request body deadline');
      if (reply.sent || reply.raw.headersSent) {
        socket?.destroy();
        return;
      }
      reply.raw.once('finish', () => socket?.destroy());
      reply.header('connection', 'close').code(e.status).send(errorBody(e));
      // A client that does not read its answer does not keep the socket.
      setTimeout(() => socket?.destroy(), 1000).unref();
    }, ms);
    timer.unref();
    const clear = () => clearTimeout(timer);
    raw.once('end', clear);
    raw.once('close', clear);
    reply.raw.once('close', clear);
    done();
  });
}
