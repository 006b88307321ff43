import { createHash } from 'node:crypto';
import type { Kysely } from 'kysely';
import type { Database } from '../db/schema.js';
import type { QueuedChunk, RunQueue } from '../executor/run-queue.js';
import type { CommittedLog } from '../inference/recording/types.js';
import { nowIso } from '../shared/ids.js';
import { parseJson } from '../shared/json.js';
import * as repo from './repository.js';
import type { MonitorFilter } from './schemas.js';

/**
 * Where a call falls in [0, 1) for a monitor: the first 32 bits of SHA-256 over (monitor id, log id). The
 * same call is chosen or not whichever process records it, however many times it is asked.
 */
export function selectionPoint(monitorId: string, logId: string): number {
  return createHash('sha256').update(`${monitorId}:${logId}`).digest().readUInt32BE(0) / 2 ** 32;
}

/** What selection needs of a monitor. */
export interface SelectingMonitor {
  id: string;
  run_id: string;
  environment: string;
  sampling_rate: number;
  filter: string;
  created_at: string;
}

function matcher(
  m: SelectingMonitor,
): (log: CommittedLog, metadata: () => Record<string, unknown>) => boolean {
  const filter = parseJson<MonitorFilter>(m.filter, {});
  const models = filter.models ? new Set(filter.models) : null;
  const pairs = Object.entries(filter.metadata ?? {});
  return (log, metadata) => {
    if (log.createdAt < m.created_at) return false;
    if (models && !models.has(log.model)) return false;
    if (pairs.length > 0) {
      const md = metadata();
      if (!pairs.every(([k, v]) => md[k] === v)) return false;
    }
    return selectionPoint(m.id, log.id) < m.sampling_rate;
  };
}

/**
 * Stores a monitor's selection of `logs` as positions of its run (one transaction: positions, selections,
 * chunks of at most `chunkSize`), then hands the chunks to the run queue. Nothing is stored for a paused
 * or deleted monitor. Returns the chunks handed over.
 */
export async function selectInto(
  db: Kysely<Database>,
  queue: RunQueue,
  monitor: SelectingMonitor,
  logs: readonly CommittedLog[],
  chunkSize: number,
): Promise<QueuedChunk[]> {
  const parsed = new Map<string, Record<string, unknown>>();
  const metadataOf = (log: CommittedLog) => () => {
    let md = parsed.get(log.id);
    if (!md) {
      md = parseJson<Record<string, unknown>>(log.metadata, {}) ?? {};
      parsed.set(log.id, md);
    }
    return md;
  };
  const matches = matcher(monitor);
  const chosen = logs.filter((log) => matches(log, metadataOf(log)));
  if (chosen.length === 0) return [];
  const chunks = await db.transaction().execute(async (tx) => {
    const first = await repo.reservePositions(tx, monitor.id, chosen.length);
    if (first === null) return [];
    const now = nowIso();
    await repo.insertSelections(
      tx,
      chosen.map((log, i) => ({
        monitor_id: monitor.id,
        position: first + i,
        log_id: log.id,
        log_created_at: log.createdAt,
        selected_at: now,
      })),
    );
    const out: QueuedChunk[] = [];
    for (let from = first; from < first + chosen.length; from += chunkSize) {
      const to = Math.min(from + chunkSize, first + chosen.length);
      // The chunk index is its first position: unique in the run, and ordered as the calls were.
      const chunk: QueuedChunk = { runId: monitor.run_id, launch: 0, chunk: from, from, to };
      await repo.insertChunk(tx, {
        run_id: monitor.run_id,
        launch_index: 0,
        chunk_index: from,
        from_position: from,
        to_position: to,
        environment: monitor.environment,
        status: 'pending',
        owner: null,
        lease_expires_at: null,
        attempts: 0,
        updated_at: now,
      });
      out.push(chunk);
    }
    return out;
  });
  for (const chunk of chunks) await queue.submitChunk(chunk, monitor.environment);
  return chunks;
}

export interface MonitorSelectorOptions {
  db: Kysely<Database>;
  queue: RunQueue;
  chunkSize: number;
  warn(message: string): void;
  /** Told of each monitor's new chunks (metrics). */
  selected?(monitorId: string, count: number): void;
}

/**
 * The log writer's listener: each committed batch is matched against the enabled monitors of its
 * containers, off the request path and one batch at a time. Failures are reported, never thrown: the
 * calls were answered and recorded whatever happens here.
 */
export class MonitorSelector {
  private tail: Promise<void> = Promise.resolve();
  private pending = 0;
  private failing = false;

  constructor(private readonly options: MonitorSelectorOptions) {}

  /** Takes a committed batch; returns at once. */
  committed(logs: CommittedLog[]): void {
    this.pending++;
    this.tail = this.tail
      .then(() => this.select(logs))
      .catch((err: unknown) => {
        if (!this.failing) this.options.warn(`monitors: selection failed: ${(err as Error).message}`);
        this.failing = true;
      })
      .finally(() => {
        this.pending--;
      });
  }

  private async select(logs: CommittedLog[]): Promise<void> {
    const { db, queue, chunkSize } = this.options;
    const byContainer = new Map<string, CommittedLog[]>();
    for (const log of logs) {
      const list = byContainer.get(log.containerId);
      if (list) list.push(log);
      else byContainer.set(log.containerId, [log]);
    }
    const monitors = await repo.enabledMonitors(db, [...byContainer.keys()]);
    for (const monitor of monitors) {
      const chunks = await selectInto(
        db,
        queue,
        monitor,
        byContainer.get(monitor.container_id) ?? [],
        chunkSize,
      );
      const count = chunks.reduce((n, c) => n + c.to - c.from, 0);
      if (count > 0) this.options.selected?.(monitor.id, count);
    }
    this.failing = false;
  }

  /** Resolves once every batch taken so far is handled. */
  async idle(): Promise<void> {
    while (this.pending > 0) await this.tail;
  }
}
