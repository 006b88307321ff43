import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { isDatabaseUnavailable } from '../db/database.js';
import { ApiError, type ErrorCode, type ValidationIssue } from '../shared/errors.js';
import { toIssues } from './validation.js';

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

export function errorBody(e: ApiError): unknown {
  if (e.code === 'validation_error') return { detail: e.issues };
  return e.details === null
    ? { error: { code: e.code, message: e.message } }
    : { error: { code: e.code, message: e.message, details: e.details } };
}

export function sendError(reply: FastifyReply, e: ApiError): FastifyReply {
  for (const [k, v] of Object.entries(e.headers)) reply.header(k, v);
  // Bodies are serialized here, not by a route's response schema, so the envelope is exact everywhere.
  return reply
    .code(e.status)
    .type('application/json; charset=utf-8')
    .serializer(JSON.stringify)
    .send(errorBody(e));
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

function routeNotFound(request: FastifyRequest): ApiError {
  return new ApiError('not_found', `Route ${request.method} ${request.url.split('?')[0]} not found`);
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
}
