import { parseRetryAfter } from './errors.js';

/** Statuses worth another attempt: rate limited, or a server or proxy that failed or was unavailable. */
export const RETRY_STATUSES = new Set([429, 500, 502, 503, 504]);

/**
 * Statuses after which even a non-idempotent request may be sent again, because the server did not act
 * on it: 429 is answered before the route runs, and Evalgate answers 503 only when a dependency the
 * request needs is down.
 */
export const UNPROCESSED_STATUSES = new Set([429, 503]);

/** A Retry-After longer than this is not waited for: the error is thrown instead. */
export const MAX_RETRY_AFTER_MS = 60_000;

const BASE_DELAY_MS = 500;
const MAX_DELAY_MS = 8_000;

/** Exponential back-off with jitter: 0.5 s, 1 s, 2 s, … up to 8 s, each reduced by up to a quarter. */
export function backoffMs(attempt: number, random = Math.random): number {
  const delay = Math.min(BASE_DELAY_MS * 2 ** attempt, MAX_DELAY_MS);
  return delay * (1 - 0.25 * random());
}

/**
 * How long to wait before the next attempt after a response: the server's Retry-After when it gives one
 * (plus a little jitter, never less than it asked), else the back-off. Null: too long to wait for.
 */
export function delayAfter(headers: Headers, attempt: number, random = Math.random): number | null {
  const retryAfter = parseRetryAfter(headers.get('retry-after'));
  if (retryAfter === null) return backoffMs(attempt, random);
  const ms = retryAfter * 1000;
  if (ms > MAX_RETRY_AFTER_MS) return null;
  return ms + 50 * random();
}

/** Error codes of connection failures that happen before a request reaches the server. */
const NOT_SENT_CODES = new Set([
  'ECONNREFUSED',
  'ENOTFOUND',
  'EAI_AGAIN',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'UND_ERR_CONNECT_TIMEOUT',
]);

/** The error code of a fetch failure (`TypeError: fetch failed` wraps the socket error as its cause). */
export function causeCode(err: unknown): string | null {
  let current: unknown = err;
  for (let depth = 0; depth < 5 && current; depth++) {
    const code = (current as { code?: unknown }).code;
    if (typeof code === 'string') return code;
    current = (current as { cause?: unknown }).cause;
  }
  return null;
}

/** Whether a connection failure certainly happened before the server could see the request. */
export function failedBeforeSending(err: unknown): boolean {
  const code = causeCode(err);
  return code !== null && NOT_SENT_CODES.has(code);
}

/** Sleeps, or rejects with the signal's reason when it is aborted first. */
export function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) {
      reject(signal.reason);
      return;
    }
    const onAbort = () => {
      clearTimeout(timer);
      reject(signal?.reason);
    };
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}
