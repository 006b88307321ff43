import type { IncomingHttpHeaders } from 'node:http';
import type { ResolvedModel } from '../catalog/models/types.js';
import { ApiError } from '../shared/errors.js';
import type { CancelSignal } from './cancel.js';
import type { ProviderAdapter } from './providers/types.js';
import { AddressBlockedError } from './upstream.js';

/** A failure worth another attempt (connection error, timeout, 5xx): retried, then a fallback, then 503. */
export class RetryableFailure extends Error {
  override name = 'RetryableFailure';
  constructor(
    /** Short and free of addresses: it ends up in the 503's details. */
    readonly reason: string,
    readonly upstreamStatus: number | null = null,
  ) {
    super(reason);
  }
}

/** The caller went away (client disconnect, run cancelled); nothing is retried. */
export class CallAbortedError extends Error {
  override name = 'AbortError';
  readonly code = 'client_disconnected';
  constructor() {
    super('The call was aborted by its caller');
  }
}

/** Seconds from a Retry-After header (seconds or an HTTP date), at least 1. */
export function retryAfterSeconds(headers: IncomingHttpHeaders): number {
  const raw = headers['retry-after'];
  const value = Array.isArray(raw) ? raw[0] : raw;
  if (value) {
    if (/^\s*\d+(\.\d+)?\s*$/.test(value)) return Math.max(1, Math.ceil(Number(value)));
    const date = Date.parse(value);
    if (!Number.isNaN(date)) return Math.max(1, Math.ceil((date - Date.now()) / 1000));
  }
  const ms = headers['retry-after-ms'];
  if (typeof ms === 'string' && /^\d+$/.test(ms)) return Math.max(1, Math.ceil(Number(ms) / 1000));
  return 1;
}

function parseBody(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
}

/**
 * An upstream answer with status >= 400 as what the gateway does about it: retry (5xx, 408), or the
 * error the caller gets, in our envelope with the upstream's message.
 */
export function upstreamHttpError(
  adapter: ProviderAdapter,
  model: ResolvedModel,
  status: number,
  headers: IncomingHttpHeaders,
  bodyText: string,
): ApiError | RetryableFailure {
  if (status >= 500 || status === 408) return new RetryableFailure(`upstream status ${status}`, status);
  const upstreamMessage = adapter.errorMessage(parseBody(bodyText));
  const details = { upstream_status: status, provider: model.provider, model: model.slug };
  if (status === 429) {
    const retryAfter = retryAfterSeconds(headers);
    return new ApiError(
      'rate_limit_exceeded',
      upstreamMessage ?? `The upstream provider is rate limiting; retry in ${retryAfter} s`,
      { ...details, retry_after: retryAfter },
      [],
      { 'Retry-After': String(retryAfter) },
    );
  }
  const message = upstreamMessage ?? `The upstream provider answered ${status}`;
  if (status === 404) return new ApiError('model_not_found', message, details);
  if (status === 413) return new ApiError('payload_too_large', message, details);
  return new ApiError('bad_request', message, details);
}

/** A transport-level failure (no usable answer) as what the gateway does about it. */
export function transportFailure(err: unknown, signal: CancelSignal | undefined): Error {
  if (signal?.aborted) return new CallAbortedError();
  if (err instanceof ApiError || err instanceof RetryableFailure) return err;
  const cause = err instanceof Error && err.cause instanceof AddressBlockedError ? err.cause : err;
  if (cause instanceof AddressBlockedError) {
    return new ApiError('bad_request', cause.message, { reason: 'upstream_address_blocked' });
  }
  const code =
    err instanceof Error && 'code' in err && typeof err.code === 'string' ? err.code : 'connection error';
  return new RetryableFailure(code);
}

/** Milliseconds to wait before asking again when `err` is an upstream 429, else null. */
export function rateLimitRetryMs(err: unknown): number | null {
  if (!(err instanceof ApiError) || err.code !== 'rate_limit_exceeded') return null;
  const seconds = Number(err.details?.retry_after ?? err.headers['Retry-After'] ?? 1);
  return Math.max(100, (Number.isFinite(seconds) ? seconds : 1) * 1000);
}
