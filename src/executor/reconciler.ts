import { Queue } from 'bullmq';
import type { Redis } from 'ioredis';
import type { Kysely } from 'kysely';
import type { Database } from '../db/schema.js';
import type { Engine } from '../engine/work.js';
import { openRedis } from '../shared/redis.js';
import { withTimeout } from '../shared/timeout.js';
import {
  CHUNK_JOB_OPTIONS,
  chunkJobId,
  finalizeJobId,
  PREPARE_OPTIONS,
  prepareJobId,
  queueName,
} from './bullmq-shared.js';
import type { QueuedChunk } from './run-queue.js';

/*
 * The database is the truth about runs; Redis only holds their jobs, and can lose them (a Redis
 * restarted without persistence, a failover to a replica that lagged, eviction). The reconciler finds
 * live runs whose jobs are gone and submits them again; `prepare` is idempotent (it re-adds the run's
 * flow, and chunks skip the positions already stored), so a run resumes where it was.
 */

/** A live run as the reconciler sees it. */
export interface LiveRun {
  id: string;
  status: string;
  environment: string;
  cancelRequested: boolean;
  updatedAt: string;
}

/** Runs looked at per pass (oldest first). */
const BATCH = 500;
/** A Redis command of the reconciler (or of a health check) that takes longer counts as Redis away. */
export const JOB_CHECK_TIMEOUT_MS = 2_000;
/** A cancelled run still live this long after its last update is ended from the database. */
const CANCEL_GRACE_MS = 2_000;

export async function liveRuns(
  db: Kysely<Database>,
  environments: readonly string[],
  limit = BATCH,
): Promise<LiveRun[]> {
  if (environments.length === 0) return [];
  const rows = await db
    .selectFrom('runs')
    .select(['id', 'status', 'environment', 'cancel_requested', 'updated_at'])
    .where('status', 'in', ['queued', 'running'])
    .where('environment', 'in', [...environments])
    // A monitor's run never finalizes and has no flow: its chunks are reconciled one by one (lostChunks).
    .where('monitor_id', 'is', null)
    .orderBy('created_at')
    .limit(limit)
    .execute();
  return rows.map((r) => ({
    id: r.id,
    status: r.status,
    environment: r.environment,
    cancelRequested: Number(r.cancel_requested) === 1,
    updatedAt: r.updated_at,
  }));
}

/**
 * The live runs whose jobs are gone: a queued run without its `prepare` job, a running one without
 * the `finalize` parent of its chunk jobs. Cancelled runs are left out (they end from the database).
 */
export async function runsWithoutJobs(queueOf: (env: string) => Queue, runs: LiveRun[]): Promise<LiveRun[]> {
  const lost: LiveRun[] = [];
  for (const run of runs) {
    if (run.cancelRequested) continue;
    const q = queueOf(run.environment);
    const id = run.status === 'queued' ? prepareJobId(run.id) : finalizeJobId(run.id);
    const job = await q.getJob(id);
    if (!job) lost.push(run);
  }
  return lost;
}

/** A pending chunk of a monitor's run, as the reconciler sees it. */
export interface PendingChunk extends QueuedChunk {
  environment: string;
}

/** Pending chunks of monitors' runs (oldest first): each should have its own `chunk` job. */
export async function pendingMonitorChunks(
  db: Kysely<Database>,
  environments: readonly string[],
  limit = BATCH,
): Promise<PendingChunk[]> {
  if (environments.length === 0) return [];
  const rows = await db
    .selectFrom('run_chunks as c')
    .innerJoin('runs as r', 'r.id', 'c.run_id')
    .select([
      'c.run_id',
      'c.launch_index',
      'c.chunk_index',
      'c.from_position',
      'c.to_position',
      'c.environment',
    ])
    .where('c.status', '=', 'pending')
    .where('r.monitor_id', 'is not', null)
    .where('r.status', '=', 'running')
    .where('c.environment', 'in', [...environments])
    .orderBy('c.updated_at')
    .limit(limit)
    .execute();
  return rows.map((r) => ({
    runId: r.run_id,
    launch: r.launch_index,
    chunk: r.chunk_index,
    from: r.from_position,
    to: r.to_position,
    environment: r.environment,
  }));
}

export interface ReconcilerOptions {
  url: string;
  prefix: string;
  environments: string[];
  workerId: string;
  intervalMs: number;
  warn(message: string): void;
}

/**
 * Runs in every BullMQ executor; a Redis lease (`<prefix>:reconciler`, renewed each pass) lets one act
 * on lost jobs at a time. Ending cancelled runs needs only the database and runs in every executor, so
 * a cancel during a Redis outage still ends its run.
 */
export class Reconciler {
  private readonly redis: Redis;
  private readonly queues = new Map<string, Queue>();
  /** Runs found without jobs by the previous pass: acted on when still so (a prepare may be adding them). */
  private suspects = new Set<string>();
  /** Monitor chunks found without jobs by the previous pass (the selector may be submitting them). */
  private chunkSuspects = new Set<string>();
  private timer: NodeJS.Timeout | null = null;
  private passing: Promise<unknown> | null = null;

  constructor(
    private readonly db: Kysely<Database>,
    private readonly engine: Engine,
    private readonly options: ReconcilerOptions,
  ) {
    // Fails fast while Redis is away (no offline queue, a command timeout), unlike BullMQ's connections.
    this.redis = openRedis(options.url, 'command', JOB_CHECK_TIMEOUT_MS);
  }

  private queue(environment: string): Queue {
    let q = this.queues.get(environment);
    if (!q) {
      q = new Queue(queueName(environment), { connection: this.redis, prefix: this.options.prefix });
      q.on('error', () => {});
      this.queues.set(environment, q);
    }
    return q;
  }

  start(): void {
    this.timer = setInterval(() => {
      if (!this.passing) this.passing = this.pass().finally(() => (this.passing = null));
    }, this.options.intervalMs);
    this.timer.unref();
  }

  /** One pass: ends cancelled runs, then (holding the lease) resubmits runs whose jobs are gone. */
  async pass(): Promise<{ ended: number; resubmitted: number }> {
    let runs: LiveRun[];
    try {
      runs = await liveRuns(this.db, this.options.environments);
    } catch (err) {
      this.options.warn(`run reconciler: the database did not answer (${(err as Error).message})`);
      return { ended: 0, resubmitted: 0 };
    }
    const ended = await this.endCancelled(runs);
    let resubmitted = 0;
    try {
      if (await this.lease()) {
        resubmitted = await this.resubmitLost(runs);
        resubmitted += await this.resubmitMonitorChunks();
      }
    } catch {
      // Redis is away: nothing can be resubmitted now; the next pass tries again.
    }
    return { ended, resubmitted };
  }

  private async endCancelled(runs: LiveRun[]): Promise<number> {
    let ended = 0;
    const before = Date.now() - CANCEL_GRACE_MS;
    for (const run of runs) {
      if (!run.cancelRequested || run.status !== 'running' || Date.parse(run.updatedAt) > before) continue;
      try {
        if ((await this.engine.finalizeRun(run.id)) !== null) ended++;
      } catch (err) {
        this.options.warn(`run reconciler: could not end cancelled run ${run.id}: ${(err as Error).message}`);
      }
    }
    return ended;
  }

  /** Takes or renews the lease; false when another executor holds it. */
  private async lease(): Promise<boolean> {
    if (this.redis.status === 'wait')
      await withTimeout(this.redis.connect(), JOB_CHECK_TIMEOUT_MS, 'connect');
    const key = `${this.options.prefix}:reconciler`;
    const ttl = this.options.intervalMs * 3;
    const taken = await this.redis.set(key, this.options.workerId, 'PX', ttl, 'NX');
    if (taken === 'OK') return true;
    if ((await this.redis.get(key)) !== this.options.workerId) return false;
    await this.redis.pexpire(key, ttl);
    return true;
  }

  private async resubmitLost(runs: LiveRun[]): Promise<number> {
    const lost = await runsWithoutJobs((env) => this.queue(env), runs);
    const next = new Set<string>();
    let resubmitted = 0;
    for (const run of lost) {
      if (!this.suspects.has(run.id)) {
        next.add(run.id);
        continue;
      }
      const q = this.queue(run.environment);
      // A prepare job kept as completed would make the add a no-op: it goes first.
      await (await q.getJob(prepareJobId(run.id)))?.remove().catch(() => {});
      await q.add('prepare', { runId: run.id }, { jobId: prepareJobId(run.id), ...PREPARE_OPTIONS });
      this.options.warn(`run reconciler: run ${run.id} (${run.status}) had lost its jobs; submitted again`);
      resubmitted++;
    }
    this.suspects = next;
    return resubmitted;
  }

  private async resubmitMonitorChunks(): Promise<number> {
    const pending = await pendingMonitorChunks(this.db, this.options.environments);
    const next = new Set<string>();
    let resubmitted = 0;
    for (const c of pending) {
      const id = chunkJobId(c.runId, c.launch, c.chunk);
      if (await this.queue(c.environment).getJob(id)) continue;
      if (!this.chunkSuspects.has(id)) {
        next.add(id);
        continue;
      }
      const { environment, ...chunk } = c;
      await this.queue(environment).add('chunk', chunk, { jobId: id, ...CHUNK_JOB_OPTIONS });
      resubmitted++;
    }
    if (resubmitted > 0) {
      this.options.warn(
        `run reconciler: ${resubmitted} monitor chunk(s) had lost their jobs; submitted again`,
      );
    }
    this.chunkSuspects = next;
    return resubmitted;
  }

  async close(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    await this.passing?.catch(() => {});
    await Promise.all([...this.queues.values()].map((q) => q.close().catch(() => {})));
    this.redis.disconnect();
  }
}
