/**
 * The one error type of the service. Domain code throws it; `renderError` in http/error-handler.ts is the
 * only place that turns it (or anything else) into an HTTP response.
 */
export const ERROR_STATUS = {
  bad_request: 400,
  content_filter: 400,
  invalid_json: 400,
  provider_not_configured: 400,
  invalid_api_key: 401,
  permission_denied: 403,
  not_found: 404,
  model_not_found: 404,
  method_not_allowed: 405,
  request_timeout: 408,
  conflict: 409,
  container_in_use: 409,
  resource_in_use: 409,
  idempotency_key_reused: 409,
  payload_too_large: 413,
  unsupported_media_type: 415,
  validation_error: 422,
  rate_limit_exceeded: 429,
  budget_exceeded: 429,
  internal_error: 500,
  not_implemented: 501,
  sandbox_unavailable: 501,
  upstream_error: 502,
  upstream_unavailable: 503,
  too_many_connections: 503,
  loop_detected: 508,
} as const;

export type ErrorCode = keyof typeof ERROR_STATUS;

/** One entry of a 422 body: where (`body`/`query`/`path` first), what, and a machine-readable type. */
export interface ValidationIssue {
  loc: (string | number)[];
  msg: string;
  type: string;
}

export class ApiError extends Error {
  override name = 'ApiError';
  readonly status: number;

  constructor(
    readonly code: ErrorCode,
    message: string,
    readonly details: Record<string, unknown> | null = null,
    readonly issues: ValidationIssue[] = [],
    readonly headers: Record<string, string> = {},
  ) {
    super(message);
    this.status = ERROR_STATUS[code];
  }

  static validation(issues: ValidationIssue[]): ApiError {
    const first = issues[0];
    return new ApiError('validation_error', first ? first.msg : 'Invalid request', null, issues);
  }

  static invalid(loc: (string | number)[], msg: string, type = 'value_error'): ApiError {
    return ApiError.validation([{ loc, msg, type }]);
  }

  static notFound(what: string, ref: string): ApiError {
    return new ApiError('not_found', `${what} '${ref}' not found`, { resource: what.toLowerCase(), ref });
  }
}

/** The shape every stored or sent error takes: a run's error, a sample's, a recorded call's, a stream's. */
export interface ErrorBody {
  code: string;
  message: string;
}

/**
 * The `{code, message}` of an error: its own code and message when `typed` accepts it (each field
 * falling back on its own), else `fallback` as it is, so that what is not a typed error never shows
 * its internals.
 */
export function errorOf(
  err: unknown,
  fallback: ErrorBody,
  typed: (err: unknown) => boolean = () => true,
): ErrorBody {
  if (!typed(err)) return fallback;
  const e = err as { code?: unknown; message?: unknown } | null;
  return {
    code: typeof e?.code === 'string' ? e.code : fallback.code,
    message: typeof e?.message === 'string' ? e.message : fallback.message,
  };
}

/** An error in the service's envelope (a validation failure as its issues), as every non-dialect route answers. */
export function envelopeOf(e: ApiError): unknown {
  if (e.code === 'validation_error') return { detail: e.issues };
  return e.details === null
    ? { error: { code: e.code, message: e.message } }
    : { error: { code: e.code, message: e.message, details: e.details } };
}
