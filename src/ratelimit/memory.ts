import { type GcraParams, gcra, type RateLimiter } from './limiter.js';

/** GCRA in process memory: the embedded mode's limiter. */
export function createMemoryLimiter(params: GcraParams, now: () => number = Date.now): RateLimiter {
  const tats = new Map<string, number>();
  // Keys whose arrival time has passed hold no information; drop them now and then.
  const sweep = setInterval(() => {
    const t = now();
    for (const [k, tat] of tats) if (tat <= t) tats.delete(k);
  }, 60_000);
  sweep.unref();
  return {
    async take(key) {
      const { decision, tat } = gcra(params, tats.get(key) ?? null, now());
      if (tat !== null) tats.set(key, tat);
      return decision;
    },
    async close() {
      clearInterval(sweep);
    },
  };
}
