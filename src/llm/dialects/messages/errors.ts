import type { ApiError } from '../../../shared/errors.js';
import type { DialectEdge } from '../types.js';

const ANTHROPIC_TYPES: Record<number, string> = {
  400: 'invalid_request_error',
  401: 'authentication_error',
  403: 'permission_error',
  404: 'not_found_error',
  413: 'request_too_large',
  429: 'rate_limit_error',
  503: 'overloaded_error',
};

/** An error in Anthropic's shape (its SDK picks the error class by status; the message shows). */
export function anthropicErrorBody(e: ApiError): unknown {
  return { type: 'error', error: { type: ANTHROPIC_TYPES[e.status] ?? 'api_error', message: e.message } };
}

/** Anthropic's Messages dialect: errors in its shape, and the key in `x-api-key` as its SDK sends it. */
export const MESSAGES_EDGE: DialectEdge = {
  errorBody: anthropicErrorBody,
  credentialHeader: 'x-api-key',
};
