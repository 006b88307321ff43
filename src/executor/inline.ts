import { setMaxListeners } from 'node:events';
import type { Kysely } from 'kysely';
import type { Database } from '../db/schema.js';
import { isStop, RunCancelled, RunInterrupted } from '../engine/errors.js';
import type { RunQueue } from '../engine/run-queue.js';
import * as store from '../engine/store.js';
import type { ChunkRef, Engine } from '../engine/work.js';
import { ScorerSetupError } from '../scoring/types.js';
import type { Executor, ExecutorOptions } from './types.js';

/** A chunk that failed this many times (not by interruption) is given up, and its run ends in error. */
const MAX_ATTEMPTS = 5;

interface Active {
  ref: ChunkRef;
  controller: AbortController;
  done: Promise<void>;
}

/**
 * Executes runs in this process from the database alone: it prepares queued runs of its environments,
 * claims their chunks under a lease (owner, expiry) that a heartbeat extends, and finalizes runs with no
 * chunk left. Any number of processes on one database share the work; a chunk whose owner died is taken
 * over when its lease expires.
 */
export class InlineExecutor implements Executor {
  private readonly active = new Map<string, Active>();
  private closed = false;
  private wake: (() => void) | null = null;
  /** A run was submitted: prepare it now rather than at the next poll. */
  private sweepNow = true;
  private loop: Promise<void> | null = null;
  private heartbeat: NodeJS.Timeout | null = null;
  private unsubscribe: (() => void) | null = null;
  /** The database error being reported, so an outage is logged when it starts and ends, not every poll. */
  private failing: string | null = null;

  constructor(
    private readonly db: Kysely<Database>,
    private readonly engine: Engine,
    private readonly queue: RunQueue,
    private readonly options: ExecutorOptions & { skipLocked: boolean },
  ) {}

  async start(): Promise<void> {
    const o = this.options;
    await store.registerWorker(this.db, {
      id: o.workerId,
      environments: o.environments,
      executor: 'inline',
      host: o.host,
      pid: process.pid,
      concurrency: o.concurrency,
    });
    this.unsubscribe = this.queue.subscribe({
      submitted: (_id, env) => {
        if (!o.environments.includes(env)) return;
        this.sweepNow = true;
        this.poke();
      },
      cancelled: (runId) => this.abortRun(runId, new RunCancelled(runId)),
    });
    await this.releaseDeadNeighbours();
    this.heartbeat = setInterval(() => void this.beat(), Math.min(1000, o.leaseMs / 3));
    this.heartbeat.unref();
    this.loop = this.run();
  }

  /**
   * Leases held by a process of this host that is gone (a restart after a crash) are given back now:
   * waiting for them to expire would only delay the runs. Other hosts' leases expire as usual.
   */
  private async releaseDeadNeighbours(): Promise<void> {
    for (const owner of await store.leaseHolders(this.db)) {
      const [host, pid] = owner.split(':');
      if (host !== this.options.host || Number(pid) === process.pid || alive(Number(pid))) continue;
      await store.releaseOwner(this.db, owner);
    }
  }

  private poke(): void {
    this.wake?.();
  }

  private sleep(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const timer = setTimeout(done, ms);
      function done() {
        clearTimeout(timer);
        resolve();
      }
      this.wake = done;
    });
  }

  private key(ref: { runId: string; launch: number; chunk: number }): string {
    return `${ref.runId}:${ref.launch}:${ref.chunk}`;
  }

  private async run(): Promise<void> {
    const o = this.options;
    let lastSweep = 0;
    let busy = false;
    while (!this.closed) {
      try {
        // Preparing queued runs and finalizing finished ones is a sweep over the runs: done on a
        // submission and every poll, not after every chunk (the chunk path finalizes its own run).
        if (this.sweepNow || Date.now() - lastSweep >= o.pollMs) {
          this.sweepNow = false;
          lastSweep = Date.now();
          for (const id of await store.queuedRuns(this.db, o.environments, 5)) {
            if (this.closed) break;
            await this.engine.prepareRun(id);
          }
          for (const id of await store.finishableRuns(this.db, o.environments)) {
            if (this.closed) break;
            await this.engine.finalizeRun(id);
          }
          busy = false;
        }
        while (!this.closed && this.active.size < o.concurrency) {
          // While chunks keep coming, claim straight away; an idle executor reads before it writes.
          const claimed = await store.claimChunk(this.db, o.workerId, o.environments, o.leaseMs, {
            skipLocked: o.skipLocked,
            probe: !busy,
          });
          busy = claimed !== undefined;
          if (!claimed) break;
          this.startChunk(claimed);
        }
        this.recovered();
      } catch (err) {
        this.failed(err);
      }
      if (!this.closed) await this.sleep(o.pollMs);
    }
  }

  private startChunk(c: store.ChunkRecord): void {
    const ref: ChunkRef = {
      runId: c.run_id,
      launch: Number(c.launch_index),
      chunk: Number(c.chunk_index),
      from: Number(c.from_position),
      to: Number(c.to_position),
    };
    const controller = new AbortController();
    // Every call in flight of the chunk listens to this one signal.
    setMaxListeners(0, controller.signal);
    const key = this.key(ref);
    const done = this.execute(ref, Number(c.attempts), controller.signal).finally(() => {
      this.active.delete(key);
      this.poke();
    });
    this.active.set(key, { ref, controller, done });
  }

  private async execute(ref: ChunkRef, attempts: number, signal: AbortSignal): Promise<void> {
    const { workerId } = this.options;
    try {
      await this.engine.runChunk(ref, signal);
      await store.completeChunk(this.db, ref, workerId);
      if ((await store.countPendingChunks(this.db, ref.runId)) === 0)
        await this.engine.finalizeRun(ref.runId);
    } catch (err) {
      const setup = err instanceof ScorerSetupError;
      const stop = isStop(err);
      if (setup) await this.engine.failRun(ref.runId, err).catch(() => {});
      else if (!stop) this.options.warn(`run ${ref.runId} chunk ${ref.chunk}: ${(err as Error).message}`);
      if (err instanceof RunInterrupted && err.reason === 'lease_lost') return;
      if (!stop && !setup && attempts >= MAX_ATTEMPTS) {
        await store.failChunk(this.db, ref).catch(() => {});
        return;
      }
      // Given back at once, so that this or another worker can take it (or the cancel can end the run).
      await store.releaseChunk(this.db, ref, workerId).catch(() => {});
    }
  }

  private abortRun(runId: string, reason: Error): void {
    for (const a of this.active.values()) if (a.ref.runId === runId) a.controller.abort(reason);
    if (reason instanceof RunCancelled) this.poke();
  }

  /** Extends the leases held, stops chunks whose run was cancelled or whose lease was taken over. */
  private async beat(): Promise<void> {
    const o = this.options;
    try {
      await store.heartbeatWorker(this.db, o.workerId);
      const refs = [...this.active.values()].map((a) => a.ref);
      const lost = await store.extendLeases(this.db, o.workerId, refs, o.leaseMs);
      for (const k of lost) this.active.get(this.key(k))?.controller.abort(new RunInterrupted('lease_lost'));
      const runs = [...new Set(refs.map((r) => r.runId))];
      for (const id of await store.stoppedRuns(this.db, runs)) this.abortRun(id, new RunCancelled(id));
    } catch (err) {
      this.failed(err);
    }
  }

  private failed(err: unknown): void {
    const message = (err as Error).message;
    if (this.failing === null) this.options.warn(`run executor: ${message}; retrying until it works again`);
    this.failing = message;
  }

  private recovered(): void {
    if (this.failing === null) return;
    this.failing = null;
    this.options.warn('run executor: working again');
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.poke();
    this.unsubscribe?.();
    if (this.heartbeat) clearInterval(this.heartbeat);
    for (const a of this.active.values()) a.controller.abort(new RunInterrupted('shutdown'));
    await Promise.all([...this.active.values()].map((a) => a.done));
    await this.loop;
    await this.engine.close();
    await store.removeWorker(this.db, this.options.workerId).catch(() => {});
  }
}

function alive(pid: number): boolean {
  if (!Number.isInteger(pid) || pid <= 0) return true;
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    // EPERM: it exists but is not ours to signal.
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}
