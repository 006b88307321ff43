import type { ErrorCode, ValidationIssue } from '../shared/errors.js';

/** A code of the server's error envelope, or any other string a proxy or a newer server may send. */
export type ErrorCodeName = ErrorCode | (string & {});

interface ErrorFields {
  status?: number | undefined;
  code?: ErrorCodeName | undefined;
  details?: Record<string, unknown> | null | undefined;
  requestId?: string | null | undefined;
  cause?: unknown;
}

/** The base of every error the client throws. */
export class EvalgateError extends Error {
  override name = 'EvalgateError';
  /** HTTP status of the response; undefined when there was none (connection, configuration). */
  readonly status: number | undefined;
  /** The `error.code` of the server's envelope (`validation_error` for a 422). */
  readonly code: ErrorCodeName;
  /** The `error.details` of the envelope. */
  readonly details: Record<string, unknown> | null;
  /** The request's id: the `x-request-id` of the response, or the one the client sent. */
  readonly requestId: string | null;

  constructor(message: string, fields: ErrorFields = {}) {
    super(message, fields.cause === undefined ? undefined : { cause: fields.cause });
    this.status = fields.status;
    this.code = fields.code ?? 'client_error';
    this.details = fields.details ?? null;
    this.requestId = fields.requestId ?? null;
  }
}

/** The client's configuration is missing or invalid (raised by the constructor, before any request). */
export class ConfigurationError extends EvalgateError {
  override name = 'ConfigurationError';
  constructor(
    message: string,
    /** The setting that is missing (`api_key`), so that another face (the CLI) can say how it takes it. */
    readonly missing: 'api_key' | null = null,
    /** Where else it could have come from (the config file's endpoint), already said in the message. */
    readonly elsewhere: string = '',
  ) {
    super(message, { code: 'configuration_error' });
  }
}

/** The server answered with an error status. The subclasses below name the common ones. */
export class APIError extends EvalgateError {
  override name = 'APIError';
  declare readonly status: number;
  /** The response headers, e.g. `x-ratelimit-remaining`. */
  readonly headers: Headers;

  constructor(message: string, fields: ErrorFields & { status: number; headers: Headers }) {
    super(message, fields);
    this.headers = fields.headers;
  }
}

/** 401: the API key is missing, malformed, unknown or revoked. */
export class AuthenticationError extends APIError {
  override name = 'AuthenticationError';
}

/** 403: the key lacks the permission the operation needs. */
export class PermissionDeniedError extends APIError {
  override name = 'PermissionDeniedError';
}

/** 404: no such resource in the key's project. */
export class NotFoundError extends APIError {
  override name = 'NotFoundError';
}

/** 409: a conflict, e.g. a label in use, a terminal run, an Idempotency-Key reused with another body. */
export class ConflictError extends APIError {
  override name = 'ConflictError';
}

/** 422: the request is invalid; `detail` lists every problem (`loc` starts with body, query or path). */
export class UnprocessableEntityError extends APIError {
  override name = 'UnprocessableEntityError';
  readonly detail: ValidationIssue[];
  constructor(
    message: string,
    fields: ErrorFields & { status: number; headers: Headers; detail: ValidationIssue[] },
  ) {
    super(message, fields);
    this.detail = fields.detail;
  }
}

/** 429: the key's rate limit is spent; `retryAfter` is the server's Retry-After in seconds. */
export class RateLimitError extends APIError {
  override name = 'RateLimitError';
  readonly retryAfter: number | null;
  constructor(
    message: string,
    fields: ErrorFields & { status: number; headers: Headers; retryAfter: number | null },
  ) {
    super(message, fields);
    this.retryAfter = fields.retryAfter;
  }
}

/** 5xx: the server (or a dependency it needs: database, Redis, an upstream model) failed. */
export class InternalServerError extends APIError {
  override name = 'InternalServerError';
}

/** No response: the server could not be reached or the connection broke. */
export class APIConnectionError extends EvalgateError {
  override name = 'APIConnectionError';
  constructor(message: string, fields: ErrorFields = {}) {
    super(message, { code: 'connection_error', ...fields });
  }
}

/** No response within the configured timeout. */
export class APIConnectionTimeoutError extends APIConnectionError {
  override name = 'APIConnectionTimeoutError';
  constructor(message: string, fields: ErrorFields = {}) {
    super(message, { code: 'timeout', ...fields });
  }
}

/** `runs.wait()` gave up before the run reached a terminal status. */
export class WaitTimeoutError extends EvalgateError {
  override name = 'WaitTimeoutError';
  constructor(
    readonly runId: string,
    readonly lastStatus: string | null,
    timeoutMs: number,
  ) {
    super(`Run ${runId} did not finish within ${timeoutMs} ms (last status: ${lastStatus ?? 'unknown'})`, {
      code: 'wait_timeout',
    });
  }
}

/** Failures after which following a run is worth another try: no response, a 429 or a 5xx. */
export function isRecoverable(err: unknown): boolean {
  return (
    err instanceof APIConnectionError || err instanceof RateLimitError || err instanceof InternalServerError
  );
}

/** Seconds from a Retry-After header (delta-seconds or an HTTP date); null when absent or unreadable. */
export function parseRetryAfter(value: string | null, now = Date.now()): number | null {
  if (value === null || value.trim() === '') return null;
  const text = value.trim();
  if (/^\d+(\.\d+)?$/.test(text)) return Number(text);
  const at = Date.parse(text);
  if (Number.isNaN(at)) return null;
  return Math.max(0, (at - now) / 1000);
}

interface Envelope {
  error?: { code?: unknown; message?: unknown; details?: unknown };
  detail?: unknown;
}

function isIssueList(value: unknown): value is ValidationIssue[] {
  return (
    Array.isArray(value) &&
    value.every(
      (v) => typeof v === 'object' && v !== null && Array.isArray(v.loc) && typeof v.msg === 'string',
    )
  );
}

/** The error a response with an error status stands for, from its status and its body (any shape). */
export function errorFromResponse(
  status: number,
  headers: Headers,
  body: unknown,
  requestId: string | null,
): APIError {
  const envelope = (typeof body === 'object' && body !== null ? body : {}) as Envelope;
  const inner = envelope.error;
  const code = typeof inner?.code === 'string' ? inner.code : undefined;
  const details =
    typeof inner?.details === 'object' && inner.details !== null
      ? (inner.details as Record<string, unknown>)
      : null;
  const fromBody = typeof inner?.message === 'string' ? inner.message : undefined;
  const text = typeof body === 'string' ? body.trim() : body === undefined ? '' : JSON.stringify(body);
  const fallback = text !== '' ? text.slice(0, 500) : undefined;
  const message = `${status} ${fromBody ?? fallback ?? 'status code (no body)'}`;
  const fields = { status, headers, code, details, requestId };
  if (status === 422 && isIssueList(envelope.detail)) {
    const detail = envelope.detail;
    const summary = detail.map((d) => `${d.loc.join('.')}: ${d.msg}`).join('; ');
    return new UnprocessableEntityError(`422 ${summary || 'Validation error'}`, {
      ...fields,
      code: code ?? 'validation_error',
      detail,
    });
  }
  switch (status) {
    case 401:
      return new AuthenticationError(message, fields);
    case 403:
      return new PermissionDeniedError(message, fields);
    case 404:
      return new NotFoundError(message, fields);
    case 409:
      return new ConflictError(message, fields);
    case 422:
      return new UnprocessableEntityError(message, { ...fields, detail: [] });
    case 429:
      return new RateLimitError(message, {
        ...fields,
        retryAfter: parseRetryAfter(headers.get('retry-after')),
      });
  }
  if (status >= 500) return new InternalServerError(message, fields);
  return new APIError(message, fields);
}
