import { setTimeout as sleep } from 'node:timers/promises';
import { ApiError } from '../shared/errors.js';

export interface GateOptions {
  /** Calls in flight per model. */
  concurrency: number;
  /** Retries of a transient failure (upstream unavailable) before it counts as the sample's error. */
  transientRetries: number;
  /** Upper bound on waits for rate limits, so a provider that never recovers ends the sample. */
  maxRateLimitWaits: number;
}

/**
 * Concurrency and rate control for a run's model calls: a bounded number in flight per model, and
 * adaptive back-off: a 429 pauses every call to that model until its Retry-After has passed, so the run
 * slows down instead of failing.
 */
export class ModelGate {
  private readonly lanes = new Map<
    string,
    { active: number; waiting: (() => void)[]; pausedUntil: number }
  >();

  constructor(private readonly options: GateOptions) {}

  private lane(model: string) {
    let lane = this.lanes.get(model);
    if (!lane) {
      lane = { active: 0, waiting: [], pausedUntil: 0 };
      this.lanes.set(model, lane);
    }
    return lane;
  }

  private async acquire(model: string, signal: AbortSignal): Promise<void> {
    const lane = this.lane(model);
    if (lane.active < this.options.concurrency) {
      lane.active++;
      return;
    }
    await new Promise<void>((resolve, reject) => {
      const onAbort = () => {
        lane.waiting = lane.waiting.filter((w) => w !== grant);
        reject(signal.reason);
      };
      const grant = () => {
        signal.removeEventListener('abort', onAbort);
        resolve();
      };
      if (signal.aborted) return reject(signal.reason);
      signal.addEventListener('abort', onAbort, { once: true });
      lane.waiting.push(grant);
    });
  }

  private release(model: string): void {
    const lane = this.lane(model);
    const next = lane.waiting.shift();
    if (next) next();
    else lane.active--;
  }

  async run<T>(model: string, fn: () => Promise<T>, signal: AbortSignal): Promise<T> {
    let transient = 0;
    let waits = 0;
    for (;;) {
      await this.acquire(model, signal);
      const lane = this.lane(model);
      let retryInMs = 0;
      try {
        const pause = lane.pausedUntil - Date.now();
        if (pause > 0) await sleep(pause, undefined, { signal });
        return await fn();
      } catch (err) {
        if (signal.aborted || !(err instanceof ApiError)) throw err;
        if (err.code === 'rate_limit_exceeded' && waits < this.options.maxRateLimitWaits) {
          waits++;
          const seconds = Number(err.details?.retry_after ?? err.headers['Retry-After'] ?? 1);
          retryInMs = Math.max(100, (Number.isFinite(seconds) ? seconds : 1) * 1000);
          lane.pausedUntil = Math.max(lane.pausedUntil, Date.now() + retryInMs);
        } else if (err.code === 'upstream_unavailable' && transient < this.options.transientRetries) {
          transient++;
          retryInMs = 250 * 2 ** transient * (0.5 + Math.random());
        } else {
          throw err;
        }
      } finally {
        this.release(model);
      }
      await sleep(retryInMs, undefined, { signal });
    }
  }
}
