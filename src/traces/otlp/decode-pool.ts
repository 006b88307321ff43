import type { Worker } from 'node:worker_threads';
import { OTLP_DECODE_THREADS } from '../../config-traces.js';
import { type AbortHandler, unwatchAbort, watchAbort } from '../../shared/abort-watch.js';
import { startWorker } from '../../shared/worker-entry.js';
import { decoded, gunzipWithin, OtlpBodyError } from './body.js';
import { decodeExport, type Encoding, type OtlpRequests } from './decode.js';
import type { OtlpLimits, OtlpSignal } from './limits.js';
import { assembleRequest } from './parts.js';

/**
 * OTLP export requests received and decoded off the event loop. A large body is handed to a worker thread
 * chunk by chunk as it arrives, so that the event loop never holds it (megabytes of chunks held there
 * make V8 collect its old space every few tens of milliseconds while large exports arrive); the thread
 * joins the chunks, gunzips them, walks them within the limits and decodes them, and sends the request
 * back serialized in parts (`parts.ts`), put back together one part per turn of the event loop.
 *
 * A thread receives the bodies of several requests at once, and decodes each when its end arrives: a
 * slow client never holds a thread idle while others wait. When a client leaves, its job is dropped in
 * the thread (its chunks forgotten); a decode already running for it finishes there and its answer is
 * discarded. A thread is never stopped for one job, since it serves others.
 */

/** How a request's body is compressed (Content-Encoding, already checked to be one of these). */
export type BodyEncoding = 'identity' | 'gzip';

/** A job's opening message: what the thread needs to decode the body once it is whole. */
export interface ThreadStart {
  type: 'start';
  id: number;
  signal: OtlpSignal;
  as: Encoding;
  encoding: BodyEncoding;
  /** The most bytes the body may decompress to. */
  limit: number;
  limits: OtlpLimits;
}
export type ThreadMessage =
  | ThreadStart
  | { type: 'chunk'; id: number; chunk: Uint8Array }
  | { type: 'end'; id: number }
  | { type: 'drop'; id: number }
  | { type: 'state' };
export type DecodeReply =
  /** The decoded request in serialized parts (`parts.ts`), deserialized one per turn of the event loop. */
  | { id: number; parts: Uint8Array[] }
  | { id: number; error: { status: 400 | 413 | 415 | 429; message: string } }
  /** A gzipped body's decompressed size, sent before it is decoded. */
  | { id: number; inflated: number }
  /** The thread's answer to `state`: the jobs whose chunks it holds. */
  | { id: 0; held: ThreadHeld };

/** The jobs whose chunks a thread holds, and their bytes. */
export interface ThreadHeld {
  jobs: number;
  bytes: number;
}

/**
 * Bodies of at most this many bytes are decoded inline: such a body holds at most about 1,400 minimal
 * spans or 32,000 empty attributes (the walk refuses more than 128 per list), a decode the size of an
 * SDK's ordinary batch (512 spans), where a thread would add its handover and the copy back of the
 * decoded request to every export.
 */
export const INLINE_BYTES = 64 * 1024;
/** Threads: one per core but one (left to the event loop), at least one, at most four. */
const THREADS = OTLP_DECODE_THREADS;
/** A thread without jobs this long is stopped. */
const IDLE_MS = 30_000;
/** A thread's heap: several times what a body within the limits decodes to. */
const HEAP_MB = 1024;

/** What a job is told, besides its answer: a gzipped body's decompressed size, once the thread knows it. */
export interface JobSpec<S extends OtlpSignal> {
  signal: S;
  as: Encoding;
  encoding: BodyEncoding;
  limit: number;
  limits: OtlpLimits;
  onInflated?: (bytes: number) => void;
}

/** A body on its way to a thread: its chunks handed over as they arrive, then its end. */
export interface BodyJob<S extends OtlpSignal> {
  /** Hands a chunk over (transferred when it owns its memory whole, else copied); it is not read after. */
  push(chunk: Uint8Array): void;
  /** The body is complete: the request, once decoded. Rejects with OtlpBodyError, or the abort's reason. */
  end(): Promise<OtlpRequests[S]>;
  /** The job given up (body past the limit, client gone): dropped in the thread, any answer discarded. */
  drop(): void;
}

class Thread {
  readonly jobs = new Map<number, Job>();
  /** Jobs whose end was sent, in that order: the thread decodes them one after the other, the first now. */
  readonly ended: Job[] = [];
  readonly stateWaiters: ((held: ThreadHeld) => void)[] = [];
  idleTimer: NodeJS.Timeout | null = null;
  constructor(readonly worker: Worker) {}
}

class Job implements AbortHandler {
  settled = false;
  readonly answer: Promise<OtlpRequests[OtlpSignal]>;
  resolve!: (value: OtlpRequests[OtlpSignal]) => void;
  reject!: (reason: unknown) => void;

  constructor(
    readonly id: number,
    readonly spec: JobSpec<OtlpSignal>,
    readonly thread: Thread,
    readonly abort: AbortSignal,
    readonly pool: DecodePool,
  ) {
    this.answer = new Promise((resolve, reject) => {
      this.resolve = resolve;
      this.reject = reject;
    });
    // Its rejection is read by whoever calls end(); a job dropped before its end has no reader.
    this.answer.catch(() => {});
  }

  onAbort(reason: unknown): void {
    this.pool.drop(this, reason);
  }
}

/** What the pool is doing and has done, for tests and metrics. */
export interface DecodePoolState {
  threads: number;
  /** Jobs open: receiving their body, or waiting for their decode. */
  jobs: number;
  started: number;
  /** Jobs dropped before their answer (client gone, body past the limit). */
  dropped: number;
  /** Chunks and bytes handed to threads: transferred (no copy) or copied. */
  forwarded: { chunks: number; bytes: number; transferred: number; copied: number };
}

class DecodePool {
  private readonly threads: Thread[] = [];
  private nextId = 1;
  private started = 0;
  private dropped = 0;
  private readonly forwarded = { chunks: 0, bytes: 0, transferred: 0, copied: 0 };

  constructor(private readonly size: number) {}

  state(): DecodePoolState {
    let jobs = 0;
    for (const t of this.threads) jobs += t.jobs.size;
    return {
      threads: this.threads.length,
      jobs,
      started: this.started,
      dropped: this.dropped,
      forwarded: { ...this.forwarded },
    };
  }

  /** What the threads hold, as they report it (after every message sent before this call). */
  async held(): Promise<ThreadHeld> {
    const each = await Promise.all(
      this.threads.map(
        (t) =>
          new Promise<ThreadHeld>((resolve) => {
            t.stateWaiters.push(resolve);
            t.worker.postMessage({ type: 'state' } satisfies ThreadMessage);
          }),
      ),
    );
    return each.reduce((a, b) => ({ jobs: a.jobs + b.jobs, bytes: a.bytes + b.bytes }), {
      jobs: 0,
      bytes: 0,
    });
  }

  open<S extends OtlpSignal>(spec: JobSpec<S>, abort: AbortSignal): BodyJob<S> {
    const thread = this.pick();
    const job = new Job(this.nextId++, spec as JobSpec<OtlpSignal>, thread, abort, this);
    if (thread.idleTimer) clearTimeout(thread.idleTimer);
    thread.idleTimer = null;
    if (thread.jobs.size === 0) thread.worker.ref();
    thread.jobs.set(job.id, job);
    const { onInflated: _, ...start } = spec;
    thread.worker.postMessage({ type: 'start', id: job.id, ...start } satisfies ThreadMessage);
    if (abort.aborted) this.drop(job, abort.reason);
    else watchAbort(abort, job);
    return {
      push: (chunk) => {
        if (!job.settled) this.push(job, chunk);
      },
      end: () => {
        if (!job.settled) {
          thread.ended.push(job);
          thread.worker.postMessage({ type: 'end', id: job.id } satisfies ThreadMessage);
        }
        return job.answer as Promise<OtlpRequests[S]>;
      },
      drop: () => this.drop(job, new OtlpBodyError(400, 'The export request was given up')),
    };
  }

  /** The thread with the fewest open jobs; a new one while every thread has some and the size allows. */
  private pick(): Thread {
    let best: Thread | null = null;
    for (const t of this.threads) if (!best || t.jobs.size < best.jobs.size) best = t;
    if (best && (best.jobs.size === 0 || this.threads.length >= this.size)) return best;
    return this.spawn();
  }

  /**
   * Hands a chunk over by transfer (no copy through the serializer): a chunk that does not own its memory
   * whole (a slice of Node's shared pool) is copied once into memory it owns first.
   */
  private push(job: Job, chunk: Uint8Array): void {
    const whole =
      chunk.byteOffset === 0 &&
      chunk.byteLength === chunk.buffer.byteLength &&
      chunk.buffer instanceof ArrayBuffer;
    const owned = whole ? chunk : new Uint8Array(chunk);
    const message = { type: 'chunk', id: job.id, chunk: owned } satisfies ThreadMessage;
    this.forwarded.chunks += 1;
    this.forwarded.bytes += chunk.byteLength;
    try {
      job.thread.worker.postMessage(message, [owned.buffer as ArrayBuffer]);
      if (whole) this.forwarded.transferred += 1;
      else this.forwarded.copied += 1;
    } catch {
      // Memory Node marks as not transferable: copied by the serializer instead.
      job.thread.worker.postMessage(message);
      this.forwarded.copied += 1;
    }
  }

  private spawn(): Thread {
    const worker = startWorker(import.meta.url, 'decode-thread', {
      resourceLimits: { maxOldGenerationSizeMb: HEAP_MB },
    });
    const thread = new Thread(worker);
    this.threads.push(thread);
    this.started += 1;
    worker.on('message', (reply: DecodeReply) => this.answer(thread, reply));
    worker.on('error', () => {
      // Reported through 'exit', which follows.
    });
    worker.on('exit', () => this.lost(thread));
    return thread;
  }

  private answer(thread: Thread, reply: DecodeReply): void {
    if ('held' in reply) {
      thread.stateWaiters.shift()?.(reply.held);
      return;
    }
    if ('inflated' in reply) {
      const job = thread.jobs.get(reply.id);
      if (job && !job.settled) job.spec.onInflated?.(reply.inflated);
      return;
    }
    // Answers come in the order the ends were sent: the first ended job's, or one dropped meanwhile.
    const at = thread.ended.findIndex((j) => j.id === reply.id);
    if (at >= 0) thread.ended.splice(at, 1);
    const job = thread.jobs.get(reply.id);
    if (!job) return;
    this.close(job);
    if ('error' in reply) job.reject(new OtlpBodyError(reply.error.status, reply.error.message));
    else assembleRequest(job.spec.signal, reply.parts).then(job.resolve, job.reject);
  }

  /** The caller gave up: the thread forgets the job's chunks; a decode running for it is discarded. */
  drop(job: Job, reason: unknown): void {
    if (job.settled) return;
    this.close(job);
    this.dropped += 1;
    job.thread.worker.postMessage({ type: 'drop', id: job.id } satisfies ThreadMessage);
    job.reject(reason);
  }

  /** The job leaves its thread's open jobs; a thread left without any is let go after a while. */
  private close(job: Job): void {
    job.settled = true;
    unwatchAbort(job.abort, job);
    const { thread } = job;
    thread.jobs.delete(job.id);
    if (thread.jobs.size > 0 || !this.threads.includes(thread)) return;
    thread.worker.unref();
    thread.idleTimer = setTimeout(() => {
      this.forget(thread);
      void thread.worker.terminate();
    }, IDLE_MS);
    thread.idleTimer.unref();
  }

  /**
   * A thread that stopped (it ran out of its heap): the request it was decoding decodes to more than a
   * decoder may hold (413); the others it held lost their bodies with it, and may be sent again (429).
   */
  private lost(thread: Thread): void {
    this.forget(thread);
    const decoding = thread.ended[0];
    for (const job of [...thread.jobs.values()]) {
      this.close(job);
      job.reject(
        job === decoding
          ? new OtlpBodyError(413, 'The export request decodes to more than the decoder may hold')
          : new OtlpBodyError(429, 'The decoder was restarted; send the export request again', 1),
      );
    }
    for (const waiter of thread.stateWaiters.splice(0)) waiter({ jobs: 0, bytes: 0 });
  }

  private forget(thread: Thread): void {
    const i = this.threads.indexOf(thread);
    if (i >= 0) this.threads.splice(i, 1);
    if (thread.idleTimer) clearTimeout(thread.idleTimer);
    thread.idleTimer = null;
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

/** The jobs whose chunks the threads hold, as they report it (for tests). */
export function decodeThreadsHeld(): Promise<ThreadHeld> {
  return shared().held();
}

/**
 * A job that receives a large body chunk by chunk on a thread, and decodes it there once it is whole.
 * `abort` drops it (the client left).
 */
export function openBodyJob<S extends OtlpSignal>(spec: JobSpec<S>, abort: AbortSignal): BodyJob<S> {
  return shared().open(spec, abort);
}

/**
 * A request whose body was read whole on the event loop (at most INLINE_BYTES) walked within the limits and
 * decoded: inline when it is, or inflates to, at most INLINE_BYTES; else on a thread. Rejects with
 * OtlpBodyError (400, 413), or with the abort's reason. A gzipped body that inflates past that is handed
 * over compressed and inflated there, so that the event loop never holds more than INLINE_BYTES of a body
 * decompressed (a small gzip bomb costs it one inflate of INLINE_BYTES).
 */
export function decodeSmall<S extends OtlpSignal>(
  spec: JobSpec<S>,
  body: Uint8Array,
  abort: AbortSignal,
): Promise<OtlpRequests[S]> {
  if (abort.aborted) return Promise.reject(abort.reason);
  try {
    let bytes: Uint8Array | null = body;
    if (spec.encoding === 'gzip') {
      // Inflated here up to INLINE_BYTES; a body limit below that is the bound itself (413 past it).
      if (spec.limit <= INLINE_BYTES) bytes = decoded(body, spec.encoding, spec.limit);
      else {
        bytes = gunzipWithin(body, INLINE_BYTES);
        if (bytes !== null) spec.onInflated?.(bytes.length);
      }
    }
    if (bytes !== null) return Promise.resolve(decodeExport(spec.signal, spec.as, bytes, spec.limits));
  } catch (err) {
    return Promise.reject(err);
  }
  const job = openBodyJob(spec, abort);
  job.push(body);
  return job.end();
}
