import { type ApiError, envelopeOf } from '../../shared/errors.js';
import type { DialectEdge } from './types.js';

/*
 * The edge shared by OpenAI's dialects (chat completions, Responses, embeddings): the key in
 * Authorization, and errors in the service's envelope with OpenAI's `type` and `param` added, so that
 * its SDKs fill `err.type` and `err.param`.
 */

/** OpenAI's error `type` for a status. */
export function openAiErrorType(e: ApiError): string {
  if (e.code === 'budget_exceeded') return 'insufficient_quota';
  if (e.status === 401) return 'authentication_error';
  if (e.status === 403) return 'permission_error';
  if (e.status === 429) return 'rate_limit_error';
  if (e.status >= 500 && e.status !== 508) return 'server_error';
  return 'invalid_request_error';
}

/** The request parameter at fault, OpenAI-style (`messages[0].content`), or null when none is. */
export function openAiParam(e: ApiError): string | null {
  const issues = e.details?.issues;
  const first: unknown = Array.isArray(issues) ? issues[0] : e.issues[0];
  const loc =
    typeof first === 'object' && first !== null && 'loc' in first && Array.isArray(first.loc)
      ? first.loc
      : null;
  if (loc !== null) {
    const path = (loc[0] === 'body' ? loc.slice(1) : loc).filter(
      (part): part is string | number => typeof part === 'string' || typeof part === 'number',
    );
    if (path.length === 0) return null;
    return path
      .map((part, i) => (typeof part === 'number' ? `[${part}]` : i === 0 ? part : `.${part}`))
      .join('');
  }
  return typeof e.details?.param === 'string' ? e.details.param : null;
}

export const OPENAI_EDGE: DialectEdge = {
  errorBody(e) {
    const body = envelopeOf(e) as { error: Record<string, unknown> };
    return { error: { ...body.error, type: openAiErrorType(e), param: openAiParam(e) } };
  },
  credentialHeader: null,
};
