/**
 * Per-model limits on the calls evaluation runs make (judges and generation). One interface, two
 * implementations: in memory (one process) and in Redis (every worker of a deployment shares them).
 */

/** A model's limits, from the run settings and the model registry. */
export interface ModelLimits {
  /** Calls in flight at once for the model, across everything sharing the limiter. */
  concurrency: number;
  /** Requests per minute, or null for no limit. */
  rpm: number | null;
  /** Tokens (prompt + completion) per minute, or null for no limit. */
  tpm: number | null;
}

/** A granted call slot. `release` is called exactly once, with the tokens the call used (0 when unknown). */
export interface Permit {
  release(tokens: number): void;
}

export interface ModelLimiter {
  /**
   * Waits until a call to `model` may start: a free concurrency slot, room under the RPM and TPM budgets,
   * and no 429 pause in force. Rejects with `signal.reason` when the signal aborts while waiting.
   */
  acquire(model: string, limits: ModelLimits, signal: AbortSignal): Promise<Permit>;
  /** An upstream 429: no call to `model` starts anywhere for `ms` milliseconds (extends, never shortens). */
  pause(model: string, ms: number): Promise<void>;
  /** Milliseconds left of the pause in force for `model` (0 when none). */
  pausedFor(model: string): number;
  close(): Promise<void>;
}
