import { ApiError } from '../shared/errors.js';
import { type CancelSignal, onCancel } from './cancel.js';
import type { ResolvedModel } from './models/types.js';
import { CallAbortedError, UpstreamError } from './upstream-errors.js';

export interface RetryPolicy {
  /** Attempts after the first, per model. */
  retries: number;
  baseMs: number;
  maxMs: number;
}

/** One failed attempt, as listed in a 503's details. */
export interface FailedAttempt {
  model: string;
  reason: string;
  upstream_status?: number;
  /** The upstream's own message, for an answer that was not a successful one. */
  upstream_message?: string;
}

/** Exponential back-off with "equal jitter": half fixed, half random, so retries spread out. */
export function backoffMs(retry: number, policy: RetryPolicy): number {
  const ceiling = Math.min(policy.maxMs, policy.baseMs * 2 ** retry);
  return ceiling / 2 + Math.random() * (ceiling / 2);
}

function sleep(ms: number, signal: CancelSignal | undefined): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(new CallAbortedError());
    const stop = signal
      ? onCancel(signal, () => {
          clearTimeout(timer);
          reject(new CallAbortedError());
        })
      : null;
    const timer = setTimeout(() => {
      stop?.();
      resolve();
    }, ms);
  });
}

/** Distinct models one call may try: the requested one and its first distinct fallbacks. */
export const MAX_MODELS_PER_CALL = 8;
/** Upstream attempts one call may make in all, retries and fallbacks together. */
export const MAX_ATTEMPTS_PER_CALL = 10;

/**
 * The fallbacks a call tries: duplicates (and the requested model itself) removed, then cut so that
 * at most MAX_MODELS_PER_CALL models are tried in all.
 */
export function boundedFallbacks(first: string, fallbacks: readonly string[]): string[] {
  const seen = new Set([first]);
  const out: string[] = [];
  for (const slug of fallbacks) {
    if (seen.has(slug)) continue;
    seen.add(slug);
    out.push(slug);
    if (out.length >= MAX_MODELS_PER_CALL - 1) break;
  }
  return out;
}

export interface ResilientCall<T> {
  first: ResolvedModel;
  /** Slugs to try, in order, once a model's attempts are used up. */
  fallbacks: readonly string[];
  resolveFallback: ((slug: string) => Promise<ResolvedModel>) | null;
  policy: RetryPolicy;
  signal?: CancelSignal | undefined;
  /** One attempt against one model; throws an `UpstreamError` of kind `retryable` for what is worth retrying. */
  attempt(model: ResolvedModel): Promise<T>;
  /** Called before every attempt after the first (to count it against the caller's rate limit); may throw. */
  beforeRetry?: (() => Promise<void>) | undefined;
}

/**
 * Runs attempts with retries and back-off on retryable failures, then the distinct fallback models in
 * order (at most MAX_MODELS_PER_CALL models and MAX_ATTEMPTS_PER_CALL attempts in all), then gives up
 * with 503 `upstream_unavailable` listing what was tried. Anything else (a 4xx, 429, an abort) ends at
 * once.
 */
export async function callResiliently<T>(call: ResilientCall<T>): Promise<{ value: T; attempts: number }> {
  const failed: FailedAttempt[] = [];
  let attempts = 0;
  const queue = boundedFallbacks(call.first.slug, call.fallbacks);
  const tried = new Set<string>();
  /** Set while the last failed attempt was an answer that was not one (a 2xx with an error, say). */
  let invalidLast: UpstreamError | null = null;
  let model: ResolvedModel | null = call.first;
  while (model && attempts < MAX_ATTEMPTS_PER_CALL) {
    tried.add(model.slug);
    for (let retry = 0; retry <= call.policy.retries && attempts < MAX_ATTEMPTS_PER_CALL; retry++) {
      if (retry > 0) await sleep(backoffMs(retry - 1, call.policy), call.signal);
      if (attempts > 0) await call.beforeRetry?.();
      attempts++;
      try {
        return { value: await call.attempt(model), attempts };
      } catch (err) {
        if (!(err instanceof UpstreamError) || err.kind !== 'retryable') throw err;
        if (call.signal?.aborted) throw new CallAbortedError();
        invalidLast = err.code === 'upstream_error' ? err : null;
        const upstreamMessage = err.upstreamMessage;
        failed.push({
          model: model.slug,
          reason: err.reason,
          ...(err.upstreamStatus !== null ? { upstream_status: err.upstreamStatus } : {}),
          ...(upstreamMessage !== null ? { upstream_message: upstreamMessage } : {}),
        });
      }
    }
    model = null;
    while (!model && queue.length > 0) {
      const slug = queue.shift()!;
      if (!call.resolveFallback) {
        failed.push({ model: slug, reason: 'fallback not resolvable here' });
        continue;
      }
      try {
        model = await call.resolveFallback(slug);
        // Two names of one model (a label and its slug) are one model.
        if (tried.has(model.slug)) model = null;
      } catch (err) {
        failed.push({ model: slug, reason: err instanceof ApiError ? err.code : 'fallback not resolvable' });
      }
    }
  }
  // Retries are spent here: the caller does not retry this one again.
  const count = `${failed.length} failed attempt${failed.length === 1 ? '' : 's'}`;
  if (invalidLast) {
    // The upstream answered, but not with an answer: a bad gateway, with what it said.
    const said = invalidLast.upstreamMessage;
    throw new UpstreamError(
      'fatal',
      'upstream_error',
      `The upstream model provider answered without a valid answer (${invalidLast.reason}${said ? `: ${said}` : ''}; ${count})`,
      { attempts: failed, ...(said !== null ? { upstream_message: said } : {}) },
    );
  }
  throw new UpstreamError(
    'fatal',
    'upstream_unavailable',
    `The upstream model provider is unavailable (${failed.length} failed attempt${failed.length === 1 ? '' : 's'})`,
    { attempts: failed },
  );
}
