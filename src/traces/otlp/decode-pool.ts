import { availableParallelism } from 'node:os';
import type { Worker } from 'node:worker_threads';
import { type AbortHandler, unwatchAbort, watchAbort } from '../../shared/abort-watch.js';
import { startWorker } from '../../shared/worker-entry.js';
import { OtlpBodyError } from './body.js';
import { decodeExport, type Encoding, type OtlpRequests } from './decode.js';
import type { OtlpLimits, OtlpSignal } from './limits.js';
import { assembleRequest } from './parts.js';

/**
 * OTLP export requests decoded off the event loop: a body is walked within the limits and decoded on a
 * worker thread, so that a large one (up to the body limit, hundreds of milliseconds of protobufjs or
 * JSON.parse) delays no other request, and the thread is stopped when the client leaves. The decoded
 * request comes back serialized in parts (`parts.ts`), bounded by the limits the walk checked, and is put
 * back together one part per turn of the event loop.
 */

export interface DecodeRequest {
  id: number;
  signal: OtlpSignal;
  as: Encoding;
  bytes: Uint8Array;
  limits: OtlpLimits;
}
export type DecodeReply =
  /** The decoded request in serialized parts (`parts.ts`), deserialized one per turn of the event loop. */
  { id: number; parts: Uint8Array[] } | { id: number; error: { status: 400 | 413 | 415; message: string } };

/**
 * Bodies of at most this many bytes are decoded inline: such a body holds at most about 1,400 minimal
 * spans or 32,000 empty attributes (the walk refuses more than 128 per list), a decode the size of an
 * SDK's ordinary batch (512 spans), where a thread would add its handover and the copy back of the
 * decoded request to every export.
 */
export const INLINE_BYTES = 64 * 1024;
/** Threads: one per core but one (left to the event loop), at least one, at most four. */
const THREADS = Math.max(1, Math.min(4, availableParallelism() - 1));
/** A thread idle this long is stopped. */
const IDLE_MS = 30_000;
/** A thread's heap: several times what a body within the limits decodes to. */
const HEAP_MB = 1024;

class Job implements AbortHandler {
  worker: Worker | null = null;

  constructor(
    readonly request: DecodeRequest,
    readonly signal: AbortSignal,
    readonly resolve: (value: OtlpRequests[OtlpSignal]) => void,
    readonly reject: (reason: unknown) => void,
    readonly abandon: (job: Job, reason: unknown) => void,
  ) {}

  onAbort(reason: unknown): void {
    this.abandon(this, reason);
  }
}

/** What the pool is doing and has done, for tests. */
export interface DecodePoolState {
  threads: number;
  busy: number;
  queued: number;
  started: number;
  abandoned: number;
}

class DecodePool {
  private readonly idle: Worker[] = [];
  private readonly running = new Map<Worker, Job>();
  private readonly queue: Job[] = [];
  private readonly idleTimers = new Map<Worker, NodeJS.Timeout>();
  private nextId = 1;
  private started = 0;
  private abandoned = 0;

  constructor(private readonly size: number) {}

  state(): DecodePoolState {
    return {
      threads: this.idle.length + this.running.size,
      busy: this.running.size,
      queued: this.queue.length,
      started: this.started,
      abandoned: this.abandoned,
    };
  }

  run(request: Omit<DecodeRequest, 'id'>, signal: AbortSignal): Promise<OtlpRequests[OtlpSignal]> {
    if (signal.aborted) return Promise.reject(signal.reason);
    return new Promise((resolve, reject) => {
      const job = new Job({ ...request, id: this.nextId++ }, signal, resolve, reject, (j, reason) =>
        this.abandon(j, reason),
      );
      watchAbort(signal, job);
      this.queue.push(job);
      this.pump();
    });
  }

  private pump(): void {
    while (this.queue.length > 0) {
      const worker = this.idle.pop() ?? (this.running.size < this.size ? this.spawn() : null);
      if (!worker) return;
      clearTimeout(this.idleTimers.get(worker));
      this.idleTimers.delete(worker);
      const job = this.queue.shift() as Job;
      job.worker = worker;
      this.running.set(worker, job);
      worker.ref();
      this.post(worker, job.request);
    }
  }

  /**
   * Hands the body over by transfer (no copy through the serializer, which costs tens of milliseconds of
   * the event loop for a body of megabytes): a body that does not own its memory whole is copied once
   * into memory it owns first. The caller does not read the body after.
   */
  private post(worker: Worker, request: DecodeRequest): void {
    const { bytes } = request;
    const owned =
      bytes.byteOffset === 0 &&
      bytes.byteLength === bytes.buffer.byteLength &&
      bytes.buffer instanceof ArrayBuffer
        ? bytes
        : new Uint8Array(bytes);
    try {
      worker.postMessage({ ...request, bytes: owned }, [owned.buffer as ArrayBuffer]);
    } catch {
      // Memory Node marks as not transferable: copied by the serializer instead.
      worker.postMessage({ ...request, bytes: owned });
    }
  }

  private spawn(): Worker {
    const worker = startWorker(import.meta.url, 'decode-thread', {
      resourceLimits: { maxOldGenerationSizeMb: HEAP_MB },
    });
    this.started += 1;
    worker.on('message', (reply: DecodeReply) => {
      const job = this.running.get(worker);
      if (!job || job.request.id !== reply.id) return;
      this.running.delete(worker);
      unwatchAbort(job.signal, job);
      if ('error' in reply) job.reject(new OtlpBodyError(reply.error.status, reply.error.message));
      else assembleRequest(job.request.signal, reply.parts).then(job.resolve, job.reject);
      this.release(worker);
      this.pump();
    });
    worker.on('error', () => {
      // Reported through 'exit', which follows.
    });
    worker.on('exit', () => {
      this.forget(worker);
      const job = this.running.get(worker);
      if (job) {
        this.running.delete(worker);
        unwatchAbort(job.signal, job);
        // A thread that ran out of its heap: the request decodes to more than a decoder may hold.
        job.reject(new OtlpBodyError(413, 'The export request decodes to more than the decoder may hold'));
      }
      this.pump();
    });
    return worker;
  }

  /** The caller gave up: a waiting job leaves the queue, a running one's thread is terminated. */
  private abandon(job: Job, reason: unknown): void {
    const queued = this.queue.indexOf(job);
    if (queued >= 0) this.queue.splice(queued, 1);
    const worker = job.worker;
    if (worker && this.running.get(worker) === job) {
      this.running.delete(worker);
      this.forget(worker);
      this.abandoned += 1;
      void worker.terminate();
    }
    job.reject(reason);
    this.pump();
  }

  private release(worker: Worker): void {
    worker.unref();
    this.idle.push(worker);
    const timer = setTimeout(() => {
      this.forget(worker);
      void worker.terminate();
    }, IDLE_MS);
    timer.unref();
    this.idleTimers.set(worker, timer);
  }

  private forget(worker: Worker): void {
    const i = this.idle.indexOf(worker);
    if (i >= 0) this.idle.splice(i, 1);
    clearTimeout(this.idleTimers.get(worker));
    this.idleTimers.delete(worker);
  }
}

let pool: DecodePool | null = null;
const shared = (): DecodePool => {
  pool ??= new DecodePool(THREADS);
  return pool;
};

export function decodePoolState(): DecodePoolState {
  return shared().state();
}

/**
 * An export request's body walked within `limits` and decoded: inline when it is small, on the pool's
 * threads otherwise. Rejects with OtlpBodyError (400, 413), or with the signal's reason when it aborts
 * (the decode is then stopped).
 */
export function decodeOff<S extends OtlpSignal>(
  signal: S,
  as: Encoding,
  bytes: Uint8Array,
  limits: OtlpLimits,
  abort: AbortSignal,
): Promise<OtlpRequests[S]> {
  if (abort.aborted) return Promise.reject(abort.reason);
  if (bytes.length <= INLINE_BYTES) {
    try {
      return Promise.resolve(decodeExport(signal, as, bytes, limits));
    } catch (err) {
      return Promise.reject(err);
    }
  }
  return shared().run({ signal, as, bytes, limits }, abort) as Promise<OtlpRequests[S]>;
}
