import type { IncomingHttpHeaders } from 'node:http';
import { ApiError, type ErrorCode } from '../shared/errors.js';
import type { CancelSignal } from './cancel.js';
import type { ResolvedModel } from './models/types.js';
import type { ProviderAdapter } from './providers/types.js';
import { AddressBlockedError } from './upstream.js';

/**
 * What an upstream failure means for whoever called: `retryable` (connection error, timeout, 5xx: worth
 * another attempt, which the provider layer alone makes, with back-off and fallbacks), `rate_limited` (a
 * 429: wait `retryAfterMs`, which evaluation runs do through their model limiter; the gateway passes it
 * on), `fatal` (a 4xx: asking again gives the same answer). The one upstream error type: every owner of a
 * retry decides by `kind`, never by message.
 */
export type UpstreamErrorKind = 'retryable' | 'rate_limited' | 'fatal';

export class UpstreamError extends ApiError {
  override name = 'UpstreamError';

  constructor(
    readonly kind: UpstreamErrorKind,
    code: ErrorCode,
    message: string,
    details: Record<string, unknown> | null = null,
    headers: Record<string, string> = {},
    /** For `rate_limited`: how long the upstream asked us to wait. */
    readonly retryAfterMs: number | null = null,
  ) {
    super(code, message, details, [], headers);
  }

  /** A retryable failure of one attempt; `reason` is short and free of addresses (it ends up in a 503). */
  static retryable(reason: string, upstreamStatus: number | null = null): UpstreamError {
    return new UpstreamError('retryable', 'upstream_unavailable', reason, {
      reason,
      ...(upstreamStatus !== null ? { upstream_status: upstreamStatus } : {}),
    });
  }

  /**
   * An answer with a 2xx status that is not a successful answer of its dialect (`{"error":…}`, `{}`, no
   * choices, a stream that does not start): retried and fallen back like a 5xx; once every attempt
   * failed so, the caller gets 502 `upstream_error` with the upstream's message in the details.
   */
  static invalidAnswer(reason: string, upstreamMessage: string | null): UpstreamError {
    return new UpstreamError('retryable', 'upstream_error', reason, {
      reason,
      ...(upstreamMessage !== null ? { upstream_message: upstreamMessage.slice(0, 500) } : {}),
    });
  }

  get upstreamMessage(): string | null {
    return typeof this.details?.upstream_message === 'string' ? this.details.upstream_message : null;
  }

  get reason(): string {
    return typeof this.details?.reason === 'string' ? this.details.reason : this.message;
  }

  get upstreamStatus(): number | null {
    return typeof this.details?.upstream_status === 'number' ? this.details.upstream_status : null;
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
 * An upstream answer with status >= 400 as what the gateway does about it: retry (5xx but 508, 408), or
 * the error the caller gets, in our envelope with the upstream's message.
 */
export function upstreamHttpError(
  adapter: ProviderAdapter,
  model: ResolvedModel,
  status: number,
  headers: IncomingHttpHeaders,
  bodyText: string,
): UpstreamError {
  if ((status >= 500 && status !== 508) || status === 408)
    return UpstreamError.retryable(`upstream status ${status}`, status);
  const upstreamMessage = adapter.errorMessage(parseBody(bodyText));
  const details = { upstream_status: status, provider: model.provider, model: model.slug };
  if (status === 429) {
    const retryAfter = retryAfterSeconds(headers);
    return new UpstreamError(
      'rate_limited',
      'rate_limit_exceeded',
      upstreamMessage ?? `The upstream provider is rate limiting; retry in ${retryAfter} s`,
      { ...details, retry_after: retryAfter },
      { 'Retry-After': String(retryAfter) },
      retryAfter * 1000,
    );
  }
  const message = upstreamMessage ?? `The upstream provider answered ${status}`;
  if (status === 404) return new UpstreamError('fatal', 'model_not_found', message, details);
  // Another Evalgate (or this one) saw the request come round again: asking again loops again.
  if (status === 508) return new UpstreamError('fatal', 'loop_detected', message, details);
  if (status === 413) return new UpstreamError('fatal', 'payload_too_large', message, details);
  return new UpstreamError('fatal', 'bad_request', message, details);
}

/** A transport-level failure (no usable answer) as what the gateway does about it. */
export function transportFailure(err: unknown, signal: CancelSignal | undefined): Error {
  if (signal?.aborted) return new CallAbortedError();
  if (err instanceof ApiError) return err;
  const cause = err instanceof Error && err.cause instanceof AddressBlockedError ? err.cause : err;
  if (cause instanceof AddressBlockedError) {
    const reason = cause.selfPort === null ? 'upstream_address_blocked' : 'upstream_is_self';
    return new UpstreamError('fatal', 'bad_request', cause.message, { reason });
  }
  const code =
    err instanceof Error && 'code' in err && typeof err.code === 'string' ? err.code : 'connection error';
  return UpstreamError.retryable(code);
}

/** Milliseconds to wait before asking again when `err` is an upstream 429, else null. */
export function rateLimitRetryMs(err: unknown): number | null {
  if (!(err instanceof UpstreamError) || err.kind !== 'rate_limited') return null;
  return Math.max(100, err.retryAfterMs ?? 1000);
}
