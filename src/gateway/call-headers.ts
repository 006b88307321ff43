import type { FastifyRequest } from 'fastify';
import { ApiError } from '../shared/errors.js';
import { isObject, type JsonObject } from '../shared/json.js';

/** The gateway's own request and answer headers, and how a call's headers are read. */
export const COST_HEADER = 'X-Evalgate-Cost';
export const LOG_ID_HEADER = 'X-Evalgate-Log-Id';
export const CONTAINER_HEADER = 'x-evalgate-container';
export const FALLBACK_HEADER = 'x-evalgate-fallback-models';
export const METADATA_HEADER = 'x-evalgate-metadata';
/** The model name the upstream that answered was given (answers carry the name the client asked for). */
export const UPSTREAM_MODEL_HEADER = 'X-Evalgate-Upstream-Model';

/** USD as a plain decimal (never exponent notation), e.g. `0.00001234`. */
export function formatCost(usd: number): string {
  if (!(usd > 0)) return '0';
  const plain = String(usd);
  if (!plain.includes('e')) return plain;
  return usd.toFixed(12).replace(/0+$/, '').replace(/\.$/, '');
}

export function headerValue(value: string | string[] | undefined): string | null {
  const v = Array.isArray(value) ? value[0] : value;
  return v === undefined || v.trim() === '' ? null : v.trim();
}

export function fallbacksOf(value: string | string[] | undefined): string[] | undefined {
  const v = headerValue(value);
  if (v === null) return undefined;
  // Duplicates removed here; the provider layer also bounds how many distinct models one call tries.
  return [
    ...new Set(
      v
        .split(',')
        .map((s) => s.trim())
        .filter((s) => s !== ''),
    ),
  ];
}

/**
 * The client's metadata for the task log: the request's `metadata` object under the
 * `X-Evalgate-Metadata` header's JSON object (the request's fields win). A header that is not a JSON
 * object is refused with 400. `guards` is the gateway's own (the verdicts of the call's guard checks,
 * which monitors select by): a client's is dropped, so that no call can claim a verdict it was not given.
 */
export function clientMetadata(req: FastifyRequest, fromBody: unknown): JsonObject {
  const header = headerValue(req.headers[METADATA_HEADER]);
  let out: JsonObject = {};
  if (header !== null) {
    let parsed: unknown;
    try {
      parsed = JSON.parse(header);
    } catch {
      parsed = null;
    }
    if (!isObject(parsed)) {
      throw new ApiError('bad_request', 'X-Evalgate-Metadata must be a JSON object', {
        header: 'X-Evalgate-Metadata',
      });
    }
    out = parsed;
  }
  if (isObject(fromBody)) out = { ...out, ...fromBody };
  if ('guards' in out) {
    const { guards: _dropped, ...own } = out;
    return own;
  }
  return out;
}

/** Names the session (a conversation, an agent's run) a call belongs to. */
export const SESSION_HEADER = 'x-evalgate-session';

/** The `X-Evalgate-Session` header's value (at most 256 characters), or null. */
export function sessionKeyOf(req: { headers: Record<string, string | string[] | undefined> }): string | null {
  return headerValue(req.headers[SESSION_HEADER])?.slice(0, 256) ?? null;
}
