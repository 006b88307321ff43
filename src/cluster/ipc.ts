import type { RateDecision } from '../ratelimit/limiter.js';

/**
 * The messages between the primary of `evalgate serve --workers N` and its workers (over the
 * `node:cluster` IPC channel). Every message carries `evalgate` so that anything else on the channel
 * (Node's own cluster messages never reach `message` handlers, but a library might send) is ignored.
 */
export type ToPrimary =
  /** Rate limit: take one request from `key`'s budget; answered with `rl-decision` of the same id. */
  | { evalgate: 'rl-take'; id: number; key: string }
  /** A key was revoked through this worker: relay to every worker. */
  | { evalgate: 'forget-key'; keyId: string }
  /** The worker listens: the primary prints the banner once all did. */
  | { evalgate: 'listening'; port: number };

export type ToWorker =
  | { evalgate: 'rl-decision'; id: number; decision: RateDecision }
  | { evalgate: 'forget-key'; keyId: string }
  /** Stop: close the listener, finish requests and streams, flush, exit. */
  | { evalgate: 'stop' };

export function isEvalgateMessage<T extends { evalgate: string }>(message: unknown): message is T {
  return typeof message === 'object' && message !== null && typeof (message as T).evalgate === 'string';
}

/** The environment variable with which the primary tells a worker its index (0…N-1, kept over restarts). */
export const WORKER_INDEX_ENV = 'EVALGATE_CLUSTER_WORKER_INDEX';
