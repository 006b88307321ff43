/**
 * Bounds how many code evaluator workers run at once in this process (EVALGATE_CODE_WORKERS), and
 * hands out the uids workers drop to when the service runs as root: one per live worker, so that
 * RLIMIT_NPROC (counted per uid) bounds each sandbox on its own.
 */
export interface WorkerPool {
  readonly size: number;
  /** Resolves with a release function once a slot is free; rejects if `signal` aborts first. */
  acquire(signal?: AbortSignal): Promise<() => void>;
  allocateUid(): number;
  releaseUid(uid: number): void;
}

const UIDS_PER_PROCESS = 1000;

export function createWorkerPool(size: number, uidBase: number): WorkerPool {
  let active = 0;
  const waiting: Array<() => void> = [];
  // Different engine processes on one machine get different uid ranges (by pid).
  const firstUid = uidBase + (process.pid % 1000) * UIDS_PER_PROCESS;
  const uidsInUse = new Set<number>();
  let nextUid = 0;

  const release = () => {
    const next = waiting.shift();
    if (next) next();
    else active--;
  };

  return {
    size,
    acquire(signal) {
      if (signal?.aborted) return Promise.reject(signal.reason);
      if (active < size) {
        active++;
        return Promise.resolve(once(release));
      }
      return new Promise((resolve, reject) => {
        const grant = () => {
          signal?.removeEventListener('abort', onAbort);
          resolve(once(release));
        };
        const onAbort = () => {
          const i = waiting.indexOf(grant);
          if (i >= 0) waiting.splice(i, 1);
          reject(signal?.reason);
        };
        signal?.addEventListener('abort', onAbort, { once: true });
        waiting.push(grant);
      });
    },
    allocateUid() {
      for (let i = 0; i < UIDS_PER_PROCESS; i++) {
        const uid = firstUid + ((nextUid + i) % UIDS_PER_PROCESS);
        if (!uidsInUse.has(uid)) {
          uidsInUse.add(uid);
          nextUid = (nextUid + i + 1) % UIDS_PER_PROCESS;
          return uid;
        }
      }
      // More live workers than uids: share one (their process budgets then add up).
      nextUid = (nextUid + 1) % UIDS_PER_PROCESS;
      return firstUid + nextUid;
    },
    releaseUid(uid) {
      uidsInUse.delete(uid);
    },
  };
}

function once(fn: () => void): () => void {
  let done = false;
  return () => {
    if (done) return;
    done = true;
    fn();
  };
}
