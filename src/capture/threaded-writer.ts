import type { Worker } from 'node:worker_threads';
import { startWorker } from '../shared/worker-entry.js';
import { HeldIds } from './held-ids.js';
import { createOutageLog, type OutageLog } from './outage-log.js';
import { canLeaveIdleClass, setIdleClass } from './thread-priority.js';
import type { ThreadReply, ThreadRequest, ThreadWorkerData } from './thread-protocol.js';
import type { LogWriter } from './types.js';
import type { LogWriterOptions } from './writer.js';

/** Records are handed to the thread in groups: this many, or whatever arrived within HANDOFF_MS. */
const HANDOFF_RECORDS = 256;
const HANDOFF_MS = 5;
/** After the thread died, a new one is started at most this often. */
const RESTART_MS = 1000;
/** A backlog (records handed over, not yet stored) at which the thread is given its CPU share back. */
const URGENT_BACKLOG = 5_000;

/** How the thread is scheduled (Linux): its id, whether it is in the idle class, whether a change is under way. */
export interface WriterThreadState {
  tid: number | null;
  idleClass: boolean;
  switching: boolean;
}

export interface ThreadedLogWriter extends LogWriter {
  thread(): WriterThreadState;
}

function spawn(data: ThreadWorkerData): Worker {
  return startWorker(import.meta.url, 'writer-thread', { workerData: data });
}

/** How the writer's thread is scheduled, kept up to date as its backlog changes. */
interface ThreadScheduler {
  /** The idle class while the thread keeps up; its background share while its backlog is high or someone awaits a flush. */
  reschedule(): void;
  /** The thread told its Linux id (null: not known there). */
  started(tid: number | null): void;
  /** The thread is gone. */
  gone(): void;
  state(): WriterThreadState;
}

function createThreadScheduler(
  urgent: number,
  relaxed: number,
  backlogOf: () => number,
  awaited: () => boolean,
  warn: ((message: string) => void) | undefined,
): ThreadScheduler {
  /** The thread's Linux id, its class, whether a change of class is under way, and whether changes are possible (null: not checked yet). */
  let tid: number | null = null;
  let idleClass = false;
  let switching = false;
  let schedulable: boolean | null = null;

  function reschedule(): void {
    if (tid === null || switching || schedulable === false) return;
    schedulable ??= canLeaveIdleClass();
    if (!schedulable) return;
    const backlog = backlogOf();
    const idle = !awaited() && (idleClass ? backlog < urgent : backlog <= relaxed);
    if (idle === idleClass) return;
    switching = true;
    const target = tid;
    void setIdleClass(target, idle).then((done) => {
      switching = false;
      if (tid !== target) return;
      if (done) {
        idleClass = idle;
        reschedule();
        return;
      }
      // No chrt, or not allowed: the thread keeps the class it has, and no change is tried again.
      schedulable = false;
      if (!idle) warn?.("The task log writer's thread could not leave the idle scheduling class");
    });
  }

  return {
    reschedule,
    started(id) {
      tid = id;
      reschedule();
    },
    gone() {
      tid = null;
      idleClass = false;
    },
    state: () => ({ tid, idleClass, switching }),
  };
}

/** The thread's reports that change nothing here: outages, warnings, committed batches, a failed start. */
function report(
  message: ThreadReply,
  outage: OutageLog,
  warn: ((message: string) => void) | undefined,
  onCommitted: LogWriterOptions['onCommitted'],
): void {
  if (message.type === 'availability') {
    if (message.available) outage.up();
    else outage.down(message.reason);
  } else if (message.type === 'warn') {
    warn?.(message.message);
  } else if (message.type === 'committed') {
    onCommitted?.(message.logs);
  } else if (message.type === 'fatal') {
    warn?.(`The task log writer's thread could not start: ${message.message}`);
  }
}

/** What was handed to the thread and what became of it: the current thread's totals, and those of threads gone. */
class ThreadTally {
  /** Handed to the current thread, and its totals so far. */
  sent = 0;
  private threadWritten = 0;
  private threadFailed = 0;
  /** Totals of threads that are gone (what they had not stored counts as failed). */
  private pastWritten = 0;
  pastFailed = 0;

  inThread(): number {
    return this.sent - this.threadWritten - this.threadFailed;
  }

  progress(written: number, failed: number): void {
    this.threadWritten = written;
    this.threadFailed = failed;
  }

  /** The thread is gone: what it had not stored counts as failed. */
  exited(): void {
    this.pastWritten += this.threadWritten;
    this.pastFailed += this.sent - this.threadWritten;
    this.sent = this.threadWritten = this.threadFailed = 0;
  }

  written(): number {
    return this.pastWritten + this.threadWritten;
  }

  failed(): number {
    return this.pastFailed + this.threadFailed;
  }
}

/** Flushes awaited on the thread, each settled when the thread says it is done (or is gone). */
class FlushWaiters {
  private next = 0;
  private readonly waiting = new Map<number, () => void>();

  awaited(): boolean {
    return this.waiting.size > 0;
  }

  /** Asks for a flush (`ask` false: nobody to ask, settled at once); `asked` is told once it is registered. */
  wait(ask: (id: number) => boolean, asked: () => void): Promise<void> {
    const id = this.next++;
    return new Promise<void>((resolve) => {
      this.waiting.set(id, resolve);
      if (!ask(id)) {
        this.waiting.delete(id);
        resolve();
      }
      asked();
    });
  }

  settle(id: number): void {
    this.waiting.get(id)?.();
    this.waiting.delete(id);
  }

  settleAll(): void {
    for (const done of this.waiting.values()) done();
    this.waiting.clear();
  }
}

/**
 * The log writer on a thread of its own (with its own database connection): `write` only queues the
 * record, which is handed over in groups; serialising it, assembling a streamed answer and the batched
 * inserts all happen on the thread. Same contract as `createLogWriter`: never waits, never throws,
 * bounded (`maxBuffered` counts what is queued here and not yet stored there, batches the thread holds
 * through a database outage included), failures counted, outages reported once each.
 * The thread starts with the first record, and again (at most once a second) if it dies.
 *
 * On Linux the thread runs at a background nice value, and in the idle scheduling class while it keeps
 * up: it then takes only CPU time that nothing else wants, and yields at once to request handling.
 * Once its backlog reaches URGENT_BACKLOG (a quarter of `maxBuffered` at most) it gets its background
 * share back, until the backlog is down to a fifth of that: on a saturated machine records are still
 * stored rather than dropped. It has that share too while a flush is awaited (and so while closing).
 * The idle class is only used where the process may leave it again.
 */
export function createThreadedLogWriter(
  databaseUrl: string,
  options: LogWriterOptions = {},
  warn?: (message: string) => void,
): ThreadedLogWriter {
  const maxBuffered = Math.max(1, options.maxBuffered ?? 50_000);
  const urgent = Math.max(1, Math.min(URGENT_BACKLOG, Math.floor(maxBuffered / 4)));
  const relaxed = Math.floor(urgent / 5);
  const data: ThreadWorkerData = {
    databaseUrl,
    // The bound is kept here; the thread takes whatever it is given.
    options: { batchSize: options.batchSize, flushMs: options.flushMs, maxBuffered: Number.MAX_SAFE_INTEGER },
    reportCommitted: options.onCommitted !== undefined,
  };

  let worker: Worker | null = null;
  let startedAt = 0;
  /** Each record queued for the thread as JSON text: one string is handed over, not an object graph. */
  let pending: string[] = [];
  let timer: NodeJS.Timeout | null = null;
  let accepted = 0;
  let dropped = 0;
  const tally = new ThreadTally();
  let closed = false;
  const flushes = new FlushWaiters();
  let onClosed: (() => void) | null = null;
  // The thread tells when the database goes and comes back; records past the bound are dropped here.
  const outage = createOutageLog(maxBuffered, () => dropped, warn);

  const inThread = () => tally.inThread();
  /** The ids of what is queued here or held there (the thread settles records in the order it got them). */
  const heldIds = new HeldIds();

  const scheduler = createThreadScheduler(urgent, relaxed, inThread, () => flushes.awaited(), warn);
  const reschedule = () => scheduler.reschedule();

  function start(): Worker | null {
    if (worker) return worker;
    if (closed || Date.now() - startedAt < RESTART_MS) return null;
    startedAt = Date.now();
    const w = spawn(data);
    w.unref();
    w.on('message', (message: ThreadReply) => {
      if (message.type === 'started') {
        scheduler.started(message.tid);
      } else if (message.type === 'progress') {
        tally.progress(message.written, message.failed);
        reschedule();
      } else if (message.type === 'flushed') {
        flushes.settle(message.id);
        reschedule();
      } else if (message.type === 'closed') {
        onClosed?.();
      } else {
        report(message, outage, warn, options.onCommitted);
      }
    });
    // A thread that cannot start or that fails takes what it held with it: counted as failed.
    w.on('error', (err) => warn?.(`The task log writer's thread failed: ${err.message}`));
    w.on('exit', () => {
      if (worker !== w) return;
      tally.exited();
      worker = null;
      scheduler.gone();
      flushes.settleAll();
      onClosed?.();
    });
    worker = w;
    return w;
  }

  /** False when there is no thread to take it, or the message cannot be copied to one. */
  function post(message: ThreadRequest): boolean {
    const w = start();
    if (!w) return false;
    try {
      w.postMessage(message);
      return true;
    } catch {
      return false;
    }
  }

  function handOff(): void {
    if (timer !== null) {
      clearTimeout(timer);
      timer = null;
    }
    if (pending.length === 0) return;
    const count = pending.length;
    const json = `[${pending.join(',')}]`;
    pending = [];
    if (post({ type: 'records', json })) tally.sent += count;
    else tally.pastFailed += count;
    reschedule();
  }

  async function flush(): Promise<void> {
    handOff();
    if (!worker) return;
    await flushes.wait((id) => post({ type: 'flush', id }), reschedule);
  }

  function queue(id: string, json: () => string): void {
    if (closed || pending.length + inThread() >= maxBuffered) {
      dropped++;
      return;
    }
    accepted++;
    pending.push(json());
    heldIds.accepted(id);
    heldIds.trim(pending.length + inThread());
    if (pending.length >= HANDOFF_RECORDS) handOff();
    else if (timer === null) {
      timer = setTimeout(handOff, HANDOFF_MS);
      timer.unref();
    }
  }

  return {
    write(record) {
      queue(record.id, () => JSON.stringify(record));
    },
    writeJson(record, json) {
      queue(record.id, () => json);
    },
    flush,
    holds: (id) => heldIds.holds(id, pending.length + inThread()),
    thread: () => scheduler.state(),
    stats: () => ({
      accepted,
      written: tally.written(),
      failed: dropped + tally.failed(),
      buffered: pending.length + inThread(),
    }),
    async close() {
      if (closed) return;
      await flush();
      closed = true;
      const w = worker;
      if (!w) return;
      await new Promise<void>((resolve) => {
        onClosed = resolve;
        w.postMessage({ type: 'close' } satisfies ThreadRequest);
      });
      await w.terminate();
    },
  };
}
