import type { RateDecision, RateLimiter } from '../ratelimit/limiter.js';
import { isEvalgateMessage, type ToPrimary, type ToWorker } from './ipc.js';

/**
 * What a cluster worker shares with the others through the primary: handed to `createServices`, which
 * stays the one place that chooses the backends.
 */
export interface ClusterLink {
  /** The rate limiter held by the primary (used when no Redis is configured). */
  rateLimiter(): RateLimiter;
  /** Tells every other worker that a key was revoked. */
  publishForget(keyId: string): void;
  /** Calls `fn` for every key revoked through another worker. */
  onForget(fn: (keyId: string) => void): void;
}

/** How long a worker waits for the primary's rate decision before letting the request pass. */
const DECISION_TIMEOUT_MS = 5_000;

function send(message: ToPrimary): boolean {
  if (!process.send || !process.connected) return false;
  process.send(message);
  return true;
}

/** The link of this process to its primary (`process.send`), in a worker forked by `node:cluster`. */
export function processClusterLink(): ClusterLink {
  let nextId = 1;
  const pending = new Map<number, { resolve: (d: RateDecision) => void; timer: NodeJS.Timeout }>();
  const forgetters: ((keyId: string) => void)[] = [];
  process.on('message', (message: unknown) => {
    if (!isEvalgateMessage<ToWorker>(message)) return;
    if (message.evalgate === 'rl-decision') {
      const waiter = pending.get(message.id);
      if (!waiter) return;
      pending.delete(message.id);
      clearTimeout(waiter.timer);
      waiter.resolve(message.decision);
    } else if (message.evalgate === 'forget-key') {
      for (const fn of forgetters) fn(message.keyId);
    }
  });
  // Without the primary (it died, or a reply was lost) the request passes, as with Redis unreachable
  // under the default `open` policy: the gateway keeps serving and the limit comes back with the primary.
  const open = (): RateDecision => ({ allowed: true, limit: 0, remaining: 0, resetAt: 0, retryAfter: 0 });
  return {
    rateLimiter: () => ({
      take(key) {
        return new Promise<RateDecision>((resolve) => {
          const id = nextId++;
          const timer = setTimeout(() => {
            pending.delete(id);
            resolve(open());
          }, DECISION_TIMEOUT_MS);
          timer.unref();
          pending.set(id, { resolve, timer });
          if (!send({ evalgate: 'rl-take', id, key })) {
            pending.delete(id);
            clearTimeout(timer);
            resolve(open());
          }
        });
      },
      async close() {
        for (const [id, waiter] of pending) {
          clearTimeout(waiter.timer);
          pending.delete(id);
          waiter.resolve(open());
        }
      },
    }),
    publishForget(keyId) {
      send({ evalgate: 'forget-key', keyId });
    },
    onForget(fn) {
      forgetters.push(fn);
    },
  };
}
