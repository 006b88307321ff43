import { availableParallelism } from 'node:os';
import type { Worker } from 'node:worker_threads';
import { type AbortHandler, unwatchAbort, watchAbort } from '../../shared/abort-watch.js';
import { startWorker } from '../../shared/worker-entry.js';
import { type LocalMetric, similarity } from './text.js';

/**
 * Local text-similarity metrics off the event loop: computed on worker threads, so that a long text
 * (up to the caps of text-limits.ts, seconds of CPU) delays no other request, and stopped when the
 * caller gives up (the client of graders/run left, a run was cancelled): the thread is terminated and
 * a fresh one started for what waits.
 */

export interface MetricRequest {
  id: number;
  metric: LocalMetric;
  input: string;
  reference: string;
}
export type MetricReply = { id: number; value: number } | { id: number; error: string };

/**
 * Texts of at most this many characters together are scored inline: there a metric costs at most
 * 15–100 µs of CPU (fuzzy_match, two texts of 512, the slowest), while a handover to a thread costs
 * 75–260 µs (measured on the 2-core development machine, see docs/graders.md), so the thread would
 * only add latency. METEOR always goes to a thread: its first score reads WordNet (about a second).
 */
export const INLINE_CHARS = 1024;
/** Threads: one per core but one (left to the event loop), at least one, at most four. */
const THREADS = Math.max(1, Math.min(4, availableParallelism() - 1));
/** A thread idle this long is stopped (its memory, WordNet's included, is given back). */
const IDLE_MS = 30_000;
/** A thread's heap: far above what a capped text needs, so a runaway is an error of that grade, not of the process. */
const HEAP_MB = 1024;

/** What the pool is doing and has done, for tests and metrics. */
export interface MetricPoolState {
  threads: number;
  busy: number;
  queued: number;
  /** Threads started, and terminated because their computation was abandoned. */
  started: number;
  abandoned: number;
  /** Computations that ended (a value or an error), abandoned ones not counted. */
  finished: number;
}

/** A thread failed (out of memory, crashed) while computing a metric. */
export class MetricThreadError extends Error {
  override name = 'MetricThreadError';
}

class Job implements AbortHandler {
  worker: Worker | null = null;

  constructor(
    readonly request: MetricRequest,
    readonly signal: AbortSignal,
    readonly resolve: (value: number) => void,
    readonly reject: (reason: unknown) => void,
    readonly abandon: (job: Job, reason: unknown) => void,
  ) {}

  onAbort(reason: unknown): void {
    this.abandon(this, reason);
  }
}

class MetricPool {
  private readonly idle: Worker[] = [];
  private readonly running = new Map<Worker, Job>();
  private readonly queue: Job[] = [];
  private readonly idleTimers = new Map<Worker, NodeJS.Timeout>();
  private nextId = 1;
  private started = 0;
  private abandoned = 0;
  private finished = 0;

  constructor(private readonly size: number) {}

  state(): MetricPoolState {
    return {
      threads: this.idle.length + this.running.size,
      busy: this.running.size,
      queued: this.queue.length,
      started: this.started,
      abandoned: this.abandoned,
      finished: this.finished,
    };
  }

  run(metric: LocalMetric, input: string, reference: string, signal: AbortSignal): Promise<number> {
    if (signal.aborted) return Promise.reject(signal.reason);
    return new Promise<number>((resolve, reject) => {
      const request = { id: this.nextId++, metric, input, reference };
      const job = new Job(request, signal, resolve, reject, (j, reason) => this.abandon(j, reason));
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
      // Held while busy, so that a process with nothing else to do waits for the answer.
      worker.ref();
      worker.postMessage(job.request);
    }
  }

  private spawn(): Worker {
    const worker = startWorker(import.meta.url, 'metric-thread', {
      resourceLimits: { maxOldGenerationSizeMb: HEAP_MB },
    });
    this.started += 1;
    let failure: Error | null = null;
    worker.on('message', (reply: MetricReply) => {
      const job = this.running.get(worker);
      if (!job || job.request.id !== reply.id) return;
      this.running.delete(worker);
      this.settle(job);
      if ('error' in reply) job.reject(new Error(reply.error));
      else job.resolve(reply.value);
      this.release(worker);
      this.pump();
    });
    worker.on('error', (err) => {
      failure = err;
    });
    worker.on('exit', () => {
      this.forget(worker);
      const job = this.running.get(worker);
      if (job) {
        this.running.delete(worker);
        this.settle(job);
        job.reject(new MetricThreadError(`the metric's thread stopped: ${failure?.message ?? 'exited'}`));
      }
      this.pump();
    });
    return worker;
  }

  private settle(job: Job): void {
    unwatchAbort(job.signal, job);
    this.finished += 1;
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

let pool: MetricPool | null = null;
const shared = (): MetricPool => {
  pool ??= new MetricPool(THREADS);
  return pool;
};

/** The shared pool's state. */
export function metricPoolState(): MetricPoolState {
  return shared().state();
}

/**
 * A local metric's value, computed inline when the texts are small and on the pool's threads
 * otherwise. Rejects with the signal's reason when it aborts (the computation is then stopped).
 */
export function computeSimilarity(
  metric: LocalMetric,
  input: string,
  reference: string,
  signal: AbortSignal,
): Promise<number> {
  if (signal.aborted) return Promise.reject(signal.reason);
  if (metric !== 'meteor' && input.length + reference.length <= INLINE_CHARS) {
    return Promise.resolve(similarity(metric, input, reference));
  }
  return shared().run(metric, input, reference, signal);
}
