/** The answer of a rate limiter for one request. */
export interface RateDecision {
  allowed: boolean;
  /** Requests allowed in a full burst. */
  limit: number;
  remaining: number;
  /** Unix seconds at which the budget is full again. */
  resetAt: number;
  /** Seconds to wait before the next request can pass (0 when allowed). */
  retryAfter: number;
}

export interface RateLimiter {
  take(key: string): Promise<RateDecision>;
  /** Resolves when the shared store behind the limiter answers (absent: nothing to reach, as in memory). */
  ping?(): Promise<void>;
  close(): Promise<void>;
}

export interface GcraParams {
  /** Steady rate: requests per `periodMs`. */
  rate: number;
  periodMs: number;
  /** Requests that may pass at once from a full budget. */
  burst: number;
}

/** The GCRA parameters of the configured limit (`config.rateLimit`): `perMinute` requests a minute. */
export function perMinuteParams(limit: { perMinute: number; burst: number }): GcraParams {
  return { rate: limit.perMinute, periodMs: 60_000, burst: limit.burst };
}

/**
 * Generic cell rate algorithm: one "theoretical arrival time" per key. Exact Retry-After, no double
 * burst at window edges, and a single number of state per key.
 * Returns the decision and the new arrival time to store (null when the request is refused).
 */
export function gcra(
  params: GcraParams,
  storedTat: number | null,
  nowMs: number,
): { decision: RateDecision; tat: number | null } {
  const interval = params.periodMs / params.rate;
  const window = interval * params.burst;
  const tat = Math.max(storedTat ?? nowMs, nowMs);
  const newTat = tat + interval;
  const allowAt = newTat - window;
  if (nowMs < allowAt) {
    const remainingMs = allowAt - nowMs;
    return {
      decision: {
        allowed: false,
        limit: params.burst,
        remaining: 0,
        resetAt: Math.ceil(tat / 1000),
        retryAfter: Math.max(1, Math.ceil(remainingMs / 1000)),
      },
      tat: null,
    };
  }
  return {
    decision: {
      allowed: true,
      limit: params.burst,
      remaining: Math.max(0, Math.floor((nowMs + window - newTat) / interval)),
      resetAt: Math.ceil(newTat / 1000),
      retryAfter: 0,
    },
    tat: newTat,
  };
}
