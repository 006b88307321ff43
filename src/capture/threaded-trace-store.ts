import type { Worker } from 'node:worker_threads';
import { startWorker } from '../shared/worker-entry.js';
import { SpanStoreUnavailableError } from './span-lane.js';
import type { SpanStoreReply, SpanStoreRequest } from './span-store-protocol.js';
import type { StoredSpan, TraceStore } from './trace-port.js';

/** How long `close` waits for the thread to close its database before it is stopped. */
const CLOSE_MS = 5_000;

export interface ThreadedTraceStore extends TraceStore {
  /** Closes the thread's database and ends the thread (after the span lane is closed: nothing is stored after). */
  close(): Promise<void>;
}

interface Pending {
  spans: StoredSpan[];
  resolve(fresh: StoredSpan[]): void;
  reject(err: Error): void;
}

/** The database's error as the thread reported it: its message and code, so that an outage reads as one. */
function errorOf(message: string, code: string | null): Error {
  const err = new Error(message);
  if (code !== null) Object.assign(err, { code });
  return err;
}

/**
 * The trace store of a SQLite database file with its span inserts on a thread of their own
 * (`span-store-thread.ts`): `store` hands the batch to the thread and answers what it reports new; the
 * rest (rare: a span's late model call, retention) runs on `local`, this process's connection. A thread
 * that stops fails what it held with `SpanStoreUnavailableError`, which the span lane keeps and retries
 * (a new thread is started for the next batch).
 */
export function createThreadedTraceStore(databaseUrl: string, local: TraceStore): ThreadedTraceStore {
  let worker: Worker | null = null;
  let nextId = 0;
  let closed = false;
  const pending = new Map<number, Pending>();

  const failAll = (err: Error) => {
    for (const p of pending.values()) p.reject(err);
    pending.clear();
  };
  /** A batch answered: while none is awaited, the thread does not keep the process alive. */
  const answered = (w: Worker, id: number) => {
    pending.delete(id);
    if (pending.size === 0) w.unref();
  };

  const start = (): Worker => {
    const w = startWorker(import.meta.url, 'span-store-thread', { workerData: { databaseUrl } });
    // The thread keeps the process alive only while a batch is awaited (a replay at start, before anything
    // else holds the event loop): `close` ends it, and a process that exits without closing leaves what
    // the lane held in the span spool.
    w.unref();
    w.on('message', (m: SpanStoreReply) => {
      if (m.type === 'closed') return;
      const p = pending.get(m.id);
      if (!p) return;
      answered(w, m.id);
      if (m.type === 'stored') p.resolve(m.fresh.map((i) => p.spans[i] as StoredSpan));
      else p.reject(errorOf(m.message, m.code));
    });
    const gone = (why: string) => {
      if (worker === w) worker = null;
      failAll(new SpanStoreUnavailableError(`The span store's thread stopped (${why})`));
    };
    w.on('error', (err) => gone(err.message));
    w.on('exit', (code) => gone(`exit code ${code}`));
    return w;
  };

  return {
    store(spans) {
      if (spans.length === 0) return Promise.resolve([]);
      if (closed) return Promise.reject(new SpanStoreUnavailableError("The span store's thread is closed"));
      worker ??= start();
      const w = worker;
      const id = nextId++;
      return new Promise<StoredSpan[]>((resolve, reject) => {
        pending.set(id, { spans, resolve, reject });
        w.ref();
        w.postMessage({ type: 'store', id, spans } satisfies SpanStoreRequest);
      });
    },
    setModelCall: (projectId, traceId, spanId, modelCall) =>
      local.setModelCall(projectId, traceId, spanId, modelCall),
    prune: (cutoff) => local.prune(cutoff),
    async close() {
      closed = true;
      const w = worker;
      if (!w) return;
      const ended = new Promise<void>((resolve) => w.once('exit', () => resolve()));
      w.postMessage({ type: 'close' } satisfies SpanStoreRequest);
      const timer = setTimeout(() => void w.terminate(), CLOSE_MS);
      await ended;
      clearTimeout(timer);
    },
  };
}
