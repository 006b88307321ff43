import type { ApiError } from '../../../shared/errors.js';
import { ERROR_STATUS, type ErrorCode } from '../../../shared/errors.js';
import type { JsonObject } from '../../../shared/json.js';
import type { DialectEdge } from '../types.js';

/** Google's canonical status names (google.rpc.Code) by HTTP status. */
const STATUSES: Record<number, string> = {
  400: 'INVALID_ARGUMENT',
  401: 'UNAUTHENTICATED',
  403: 'PERMISSION_DENIED',
  404: 'NOT_FOUND',
  405: 'INVALID_ARGUMENT',
  408: 'DEADLINE_EXCEEDED',
  409: 'ABORTED',
  413: 'INVALID_ARGUMENT',
  415: 'INVALID_ARGUMENT',
  429: 'RESOURCE_EXHAUSTED',
  500: 'INTERNAL',
  501: 'UNIMPLEMENTED',
  502: 'UNAVAILABLE',
  503: 'UNAVAILABLE',
  504: 'DEADLINE_EXCEEDED',
  508: 'ABORTED',
};

/** An error in Google's shape: `{"error": {"code": <HTTP status>, "message", "status"}}`. */
export function googleErrorBody(code: number, message: string): JsonObject {
  return {
    error: { code, message, status: STATUSES[code] ?? (code >= 500 ? 'INTERNAL' : 'FAILED_PRECONDITION') },
  };
}

/** An error reported inside a stream (by the service's error code) in Google's shape. */
export function googleErrorOf(code: string, message: string): JsonObject {
  const status = (ERROR_STATUS as Record<string, number>)[code] ?? 500;
  return googleErrorBody(status, message);
}

/**
 * Gemini's edge: errors in Google's shape (its SDK raises an ApiError with the status and message), the
 * key in `x-goog-api-key` as its SDK sends it. The service's own code stays in `details`.
 */
export const GEMINI_EDGE: DialectEdge = {
  errorBody(e: ApiError) {
    const body = googleErrorBody(e.status, e.message);
    const details = [{ '@type': 'type.googleapis.com/google.rpc.ErrorInfo', reason: e.code as ErrorCode }];
    return { error: { ...(body.error as JsonObject), details } };
  },
  credentialHeader: 'x-goog-api-key',
};
