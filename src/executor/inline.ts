import { setMaxListeners } from 'node:events';
import type { Kysely } from 'kysely';
import type { Database } from '../db/schema.js';
import { isStop, RunCancelled, RunInterrupted } from '../engine/errors.js';
import type { ChunkRef, Engine } from '../engine/work.js';
import { ScorerSetupError } from '../scoring/types.js';
import { LeaseKeeper } from './lease-keeper.js';
import * as leases from './leases.js';
import type { RunQueue } from './run-queue.js';
import type { Executor, ExecutorOptions } from './types.js';
import { registerWorker, removeWorker } from './workers.js';

/** A chunk that failed this many times (not by interruption) is given up, and its run ends in error. */
const MAX_ATTEMPTS = 5;

interface Active {
  ref: ChunkRef;
  controller: AbortController;
  done: Promise<void>;
}

/**
 * Executes runs in this process from the database alone: it prepares queued runs of its environments,
 * claims their chunks under a lease (owner, expiry) that its lease keeper (lease-keeper.ts) extends, and finalizes runs with no
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
  private readonly keeper: LeaseKeeper;
  private unsubscribe: (() => void) | null = null;
  /** The database error being reported, so an outage is logged when it starts and ends, not every poll. */
  private failing: string | null = null;

  constructor(
    private readonly db: Kysely<Database>,
    private readonly engine: Engine,
    private readonly queue: RunQueue,
    private readonly options: ExecutorOptions & { skipLocked: boolean },
  ) {
    this.keeper = new LeaseKeeper({
      db,
      workerId: options.workerId,
      leaseMs: options.leaseMs,
      held: () => [...this.active.values()].map((a) => a.ref),
      lost: (key) => this.active.get(this.key(key))?.controller.abort(new RunInterrupted('lease_lost')),
      stopped: (runId) => this.abortRun(runId, new RunCancelled(runId)),
      failed: (err) => this.failed(err),
    });
  }

  async start(): Promise<void> {
    const o = this.options;
    await registerWorker(this.db, {
      id: o.workerId,
      environments: o.environments,
      executor: 'inline',
      host: o.host,
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
    this.keeper.start();
    this.loop = this.run();
  }

  /**
   * Leases held by a process of this host that is gone (a restart after a crash) are given back now:
   * waiting for them to expire would only delay the runs. Other hosts' leases expire as usual.
   */
  private async releaseDeadNeighbours(): Promise<void> {
    for (const owner of await leases.leaseHolders(this.db)) {
      const [host, pid] = owner.split(':');
      if (host !== this.options.host || Number(pid) === process.pid || alive(Number(pid))) continue;
      await leases.releaseOwner(this.db, owner);
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
          for (const id of await leases.queuedRuns(this.db, o.environments, 5)) {
            if (this.closed) break;
            await this.engine.prepareRun(id);
          }
          for (const id of await leases.finishableRuns(this.db, o.environments)) {
            if (this.closed) break;
            await this.engine.finalizeRun(id);
          }
          busy = false;
        }
        while (!this.closed && this.active.size < o.concurrency) {
          // While chunks keep coming, claim straight away; an idle executor reads before it writes.
          const claimed = await leases.claimChunk(this.db, o.workerId, o.environments, o.leaseMs, {
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

  private startChunk(c: leases.ChunkRecord): void {
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
      if ((await this.engine.completeChunk(ref, workerId)) === 'finalize')
        await this.engine.finalizeRun(ref.runId);
    } catch (err) {
      const setup = err instanceof ScorerSetupError;
      const stop = isStop(err);
      if (setup) await this.engine.failRun(ref.runId, err).catch(() => {});
      else if (!stop) this.options.warn(`run ${ref.runId} chunk ${ref.chunk}: ${(err as Error).message}`);
      if (err instanceof RunInterrupted && err.reason === 'lease_lost') return;
      if (!stop && !setup && attempts >= MAX_ATTEMPTS) {
        await this.engine
          .giveUpChunk(ref, attempts, err)
          .catch((e: Error) => this.options.warn(`run ${ref.runId} chunk ${ref.chunk}: ${e.message}`));
        await leases.failChunk(this.db, ref).catch(() => {});
        return;
      }
      // Given back at once, so that this or another worker can take it (or the cancel can end the run).
      await leases.releaseChunk(this.db, ref, workerId).catch(() => {});
    }
  }

  private abortRun(runId: string, reason: Error): void {
    for (const a of this.active.values()) if (a.ref.runId === runId) a.controller.abort(reason);
    if (reason instanceof RunCancelled) this.poke();
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
    this.keeper.stop();
    for (const a of this.active.values()) a.controller.abort(new RunInterrupted('shutdown'));
    await Promise.all([...this.active.values()].map((a) => a.done));
    await this.loop;
    await this.engine.close();
    await removeWorker(this.db, this.options.workerId).catch(() => {});
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
