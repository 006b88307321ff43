import os from 'node:os';
import type { Worker } from 'node:worker_threads';
import { ApiError } from '../../shared/errors.js';
import { startWorker } from '../../shared/worker-entry.js';
import type { AgreementFigures, AgreementJob } from './compute.js';

/** What the main thread sends a statistics thread, and what it answers. */
export interface ThreadRequest {
  job: AgreementJob;
}
export type ThreadReply = { figures: AgreementFigures[] } | { error: string };

export interface ThreadPoolOptions {
  /** Computations run at once, each on a thread of its own. */
  threads: number;
  /** Computations that may wait for a thread; one more is refused (429). */
  maxWaiting: number;
  /** A thread left without work this long ends (a new one starts with the next job). */
  idleMs: number;
}

/** One thread less than the machine's cores (at least one, at most two): the event loop keeps a core. */
export function defaultPoolOptions(): ThreadPoolOptions {
  return {
    threads: Math.max(1, Math.min(2, os.availableParallelism() - 1)),
    maxWaiting: 16,
    idleMs: 30_000,
  };
}

function spawn(): Worker {
  return startWorker(import.meta.url, 'thread');
}

interface Task {
  job: AgreementJob;
  resolve(figures: AgreementFigures[]): void;
  reject(err: Error): void;
}

interface Slot {
  worker: Worker;
  task: Task | null;
  idle: NodeJS.Timeout | null;
}

/**
 * A small pool of statistics threads: at most `threads` computations at once, `maxWaiting` more queued,
 * the rest refused. Threads start on demand and end after `idleMs` without work; an idle thread does not
 * keep the process alive. A thread that dies fails its job only; the next job starts a new one.
 */
export class StatisticsThreads {
  private readonly slots: Slot[] = [];
  private readonly waiting: Task[] = [];

  constructor(private readonly options: ThreadPoolOptions = defaultPoolOptions()) {}

  /** Computations running or waiting now. */
  get pending(): number {
    return this.waiting.length + this.slots.filter((s) => s.task !== null).length;
  }

  run(job: AgreementJob): Promise<AgreementFigures[]> {
    if (this.waiting.length >= this.options.maxWaiting) {
      return Promise.reject(
        new ApiError(
          'rate_limit_exceeded',
          'Too many agreement computations are in progress; retry in a few seconds',
          { reason: 'agreement_busy', retry_after: 5 },
          [],
          { 'Retry-After': '5' },
        ),
      );
    }
    return new Promise((resolve, reject) => {
      this.waiting.push({ job, resolve, reject });
      this.dispatch();
    });
  }

  /** Ends every thread; jobs running or waiting fail. */
  async close(): Promise<void> {
    for (const task of this.waiting.splice(0)) task.reject(new Error('statistics threads closed'));
    await Promise.all([...this.slots].map((slot) => this.end(slot, new Error('statistics threads closed'))));
  }

  private dispatch(): void {
    while (this.waiting.length > 0) {
      let slot = this.slots.find((s) => s.task === null);
      if (!slot) {
        if (this.slots.length >= this.options.threads) return;
        slot = this.start();
      }
      const task = this.waiting.shift() as Task;
      if (slot.idle) clearTimeout(slot.idle);
      slot.idle = null;
      slot.task = task;
      // While it computes, the thread holds the process open (a CLI awaiting its answer must not exit).
      slot.worker.ref();
      slot.worker.postMessage({ job: task.job } satisfies ThreadRequest);
    }
  }

  private start(): Slot {
    const worker = spawn();
    worker.unref();
    const slot: Slot = { worker, task: null, idle: null };
    worker.on('message', (reply: ThreadReply) => {
      const task = slot.task;
      slot.task = null;
      worker.unref();
      if ('error' in reply) task?.reject(new Error(`agreement statistics failed: ${reply.error}`));
      else task?.resolve(reply.figures);
      slot.idle = setTimeout(() => void this.end(slot, null), this.options.idleMs);
      slot.idle.unref();
      this.dispatch();
    });
    worker.on('error', (err) => void this.end(slot, err));
    worker.on('exit', (code) => void this.end(slot, new Error(`statistics thread exited with code ${code}`)));
    this.slots.push(slot);
    return slot;
  }

  /** Takes a thread out of the pool (its job, if any, fails with `err`) and starts what waits. */
  private async end(slot: Slot, err: Error | null): Promise<void> {
    const at = this.slots.indexOf(slot);
    if (at < 0) return;
    this.slots.splice(at, 1);
    if (slot.idle) clearTimeout(slot.idle);
    const task = slot.task;
    slot.task = null;
    if (task) task.reject(err ?? new Error('statistics thread ended'));
    this.dispatch();
    await slot.worker.terminate();
  }
}
