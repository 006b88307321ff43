import type { Kysely } from 'kysely';
import type { Database } from '../db/schema.js';
import type { ChunkKey } from '../engine/store/chunks.js';
import { extendLeases, stoppedRuns } from './leases.js';
import { heartbeatWorker } from './workers.js';

/**
 * What the lease keeper sees of the executor it serves: the chunks it holds, and where to report a
 * lease lost, a run stopped, or a failure to reach the database. Nothing of its loop.
 */
export interface LeaseKeeperContext {
  db: Kysely<Database>;
  workerId: string;
  leaseMs: number;
  held(): ChunkKey[];
  /** Another worker took the chunk over (this one's lease had expired). */
  lost(key: ChunkKey): void;
  /** The run was cancelled or has ended. */
  stopped(runId: string): void;
  failed(err: unknown): void;
}

/**
 * Keeps an executor's leases alive apart from its loop: on a timer, beats the worker's heartbeat,
 * extends the leases of the chunks it holds and reports those lost and the runs stopped meanwhile.
 */
export class LeaseKeeper {
  private timer: NodeJS.Timeout | null = null;

  constructor(private readonly ctx: LeaseKeeperContext) {}

  start(): void {
    this.timer = setInterval(() => void this.beat(), Math.min(1000, this.ctx.leaseMs / 3));
    this.timer.unref();
  }

  async beat(): Promise<void> {
    const { ctx } = this;
    try {
      await heartbeatWorker(ctx.db, ctx.workerId);
      const held = ctx.held();
      for (const key of await extendLeases(ctx.db, ctx.workerId, held, ctx.leaseMs)) ctx.lost(key);
      const runs = [...new Set(held.map((k) => k.runId))];
      for (const id of await stoppedRuns(ctx.db, runs)) ctx.stopped(id);
    } catch (err) {
      ctx.failed(err);
    }
  }

  stop(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
  }
}
