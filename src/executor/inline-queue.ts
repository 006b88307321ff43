import { type Kysely, sql } from 'kysely';
import type { Database } from '../db/schema.js';
import { Listeners, type QueuedChunk, type RunQueue, type RunQueueListener } from './run-queue.js';

/**
 * The embedded run queue: the database is the queue. Submitting wakes this process's executor at once;
 * executors in other processes find the run by polling. Cancellation reaches this process's chunks at
 * once and other processes' within their next heartbeat (about a second), through the stored flag.
 */
export class InlineRunQueue implements RunQueue {
  private readonly listeners = new Listeners();

  constructor(private readonly db: Kysely<Database>) {}

  async submit(run: { id: string; environment: string }): Promise<void> {
    this.listeners.submitted(run.id, run.environment);
  }

  /** The chunk is claimed from the database: this process's executor is woken to look at once. */
  async submitChunk(chunk: QueuedChunk, environment: string): Promise<void> {
    this.listeners.submitted(chunk.runId, environment);
  }

  async cancel(runId: string): Promise<void> {
    this.listeners.cancelled(runId);
  }

  async depth(): Promise<Record<string, { waiting: number; active: number }>> {
    const now = Date.now();
    const rows = await sql<{ environment: string; waiting: number | string; active: number | string }>`
      select environment,
        sum(case when lease_expires_at is null or lease_expires_at < ${now} then 1 else 0 end) as waiting,
        sum(case when lease_expires_at >= ${now} then 1 else 0 end) as active
      from run_chunks where status = 'pending' group by environment`.execute(this.db);
    const out: Record<string, { waiting: number; active: number }> = {};
    for (const r of rows.rows) out[r.environment] = { waiting: Number(r.waiting), active: Number(r.active) };
    return out;
  }

  subscribe(listener: RunQueueListener): () => void {
    return this.listeners.add(listener);
  }

  async close(): Promise<void> {}
}
