import { createHash } from 'node:crypto';
import type { Kysely, Transaction } from 'kysely';
import type { CommittedLog } from '../capture/types.js';
import type { Database } from '../db/schema.js';
import type { QueuedChunk, RunQueue } from '../executor/run-queue.js';
import { verdictMatcher } from '../guards/recorded.js';
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
  container_id: string;
  environment: string;
  sampling_rate: number;
  filter: string;
  created_at: string;
}

/** The calls of `logs` the monitor chooses: recorded since it exists, matching its filter, under its rate. */
export function chooseLogs(m: SelectingMonitor, logs: readonly CommittedLog[]): CommittedLog[] {
  const filter = parseJson<MonitorFilter>(m.filter, {});
  const models = filter.models ? new Set<string>(filter.models) : null;
  const routes = filter.routes ? new Set<string>(filter.routes) : null;
  const pairs = Object.entries(filter.metadata ?? {});
  const guards = filter.guards ? verdictMatcher(filter.guards) : null;
  const needsMetadata = routes !== null || pairs.length > 0 || guards !== null;
  return logs.filter((log) => {
    if (log.createdAt < m.created_at) return false;
    if (models && !models.has(log.model)) return false;
    if (needsMetadata) {
      const md = parseJson<Record<string, unknown>>(log.metadata, {}) ?? {};
      if (routes && !(typeof md.route === 'string' && routes.has(md.route))) return false;
      if (!pairs.every(([k, v]) => md[k] === v)) return false;
      if (guards && !guards(md)) return false;
    }
    return selectionPoint(m.id, log.id) < m.sampling_rate;
  });
}

/**
 * Stores `chosen` as positions [first, first + n) of the monitor's run (inside the caller's transaction):
 * their selections, and the chunks that score them (at most `chunkSize` each). Returns the chunks, to be
 * handed to the run queue once the transaction has committed.
 */
export async function storeSelection(
  tx: Transaction<Database>,
  monitor: Pick<SelectingMonitor, 'id' | 'run_id' | 'environment'>,
  chosen: readonly Pick<CommittedLog, 'id' | 'createdAt'>[],
  first: number,
  chunkSize: number,
): Promise<QueuedChunk[]> {
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
}

export async function submit(
  queue: RunQueue,
  monitor: Pick<SelectingMonitor, 'environment'>,
  chunks: QueuedChunk[],
): Promise<void> {
  for (const chunk of chunks) await queue.submitChunk(chunk, monitor.environment);
}

/**
 * A backfill: selects from `logs` (past calls, outside the monitor's high-water mark) as new positions of
 * its run. Nothing is stored for a paused or deleted monitor. Returns the chunks handed over.
 */
export async function selectInto(
  db: Kysely<Database>,
  queue: RunQueue,
  monitor: SelectingMonitor,
  logs: readonly CommittedLog[],
  chunkSize: number,
): Promise<QueuedChunk[]> {
  const chosen = chooseLogs(monitor, logs);
  if (chosen.length === 0) return [];
  const chunks = await db.transaction().execute(async (tx) => {
    const first = await repo.reservePositions(tx, monitor.id, chosen.length);
    return first === null ? [] : storeSelection(tx, monitor, chosen, first, chunkSize);
  });
  await submit(queue, monitor, chunks);
  return chunks;
}

/** Seqs one selection transaction considers at most (a long gap is taken in several). */
export const SELECTION_PAGE = 5_000;

const fromRow = (l: Awaited<ReturnType<typeof repo.logsAfter>>[number]): CommittedLog => ({
  id: l.id,
  projectId: l.project_id,
  containerId: l.container_id,
  seq: Number(l.seq),
  model: l.model,
  metadata: l.metadata,
  createdAt: l.created_at,
});

/**
 * Moves the monitor's high-water mark up to seq `through` of its container, selecting the calls in
 * between, in one transaction per page: the monitor's row is locked, the seqs after its mark are read
 * (those of `batch`, a committed batch of this container in seq order, from memory; the others from the
 * database), the chosen ones stored as positions with their chunks, and the mark moved, together. So a
 * seq is considered exactly once, whichever process (or catch-up) gets there first, and a batch whose
 * writer died before selecting it is selected by the next one. Returns the chunks handed to the queue.
 */
export async function selectThrough(
  db: Kysely<Database>,
  queue: RunQueue,
  monitor: SelectingMonitor,
  through: number,
  chunkSize: number,
  batch: readonly CommittedLog[] = [],
): Promise<QueuedChunk[]> {
  const batchFirst = batch[0]?.seq ?? through + 1;
  const all: QueuedChunk[] = [];
  for (;;) {
    const step = await db.transaction().execute(async (tx) => {
      const mark = await repo.lockMark(tx, monitor.id);
      if (!mark || mark.selectedThrough >= through) return null;
      const upTo = Math.min(through, mark.selectedThrough + SELECTION_PAGE);
      const gapEnd = Math.min(upTo, batchFirst - 1);
      const gap =
        gapEnd > mark.selectedThrough
          ? (await repo.logsAfter(tx, monitor.container_id, mark.selectedThrough, gapEnd)).map(fromRow)
          : [];
      const known = batch.filter((l) => l.seq > mark.selectedThrough && l.seq <= upTo);
      const chosen = chooseLogs(monitor, gap.length ? [...gap, ...known] : known);
      const chunks = chosen.length
        ? await storeSelection(tx, monitor, chosen, mark.nextPosition, chunkSize)
        : [];
      await repo.advanceMark(tx, monitor.id, upTo, chosen.length);
      return { chunks, done: upTo >= through };
    });
    if (!step) return all;
    await submit(queue, monitor, step.chunks);
    all.push(...step.chunks);
    if (step.done) return all;
  }
}
