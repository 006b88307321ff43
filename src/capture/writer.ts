import type { Kysely } from 'kysely';
import { isDatabaseClosed, isDatabaseUnavailable, isUniqueViolation } from '../db/database.js';
import type { Database } from '../db/schema.js';
import { recordGatewaySpans } from './gateway-spans.js';
import { HeldIds } from './held-ids.js';
import { draftOf } from './log-row.js';
import { createOutageLog, type OutageLog } from './outage-log.js';
import { assignSessions, pruneExpiredKeys, type SessionAsk } from './sessions/assign.js';
import { insertLogRows, type NewLogRow, reserveSeqs } from './task-log-store.js';
import type { CommittedLog, LogWriter } from './types.js';

export interface LogWriterOptions {
  /** Records per transaction; a full batch is written at once. */
  batchSize?: number;
  /** A partial batch waits at most this long. */
  flushMs?: number;
  /** Records held (buffered and in flight) before new ones are dropped and counted as failed. */
  maxBuffered?: number;
  /** Called after every batch (read `stats()` for the counts). */
  onProgress?: () => void;
  /** Told when the database stops (`down`, why) and starts (`up`) taking batches; without it, `warn` says so. */
  outage?: OutageLog;
  /** The writer's warnings: an outage and what it dropped, a batch the database refused. */
  warn?: (message: string) => void;
  /** Told of every batch once it is committed (the monitors select from it); must not throw or wait. */
  onCommitted?: (logs: CommittedLog[]) => void;
}

const committedOf = (rows: NewLogRow[]): CommittedLog[] =>
  rows.map((r) => ({
    id: r.id,
    projectId: r.project_id,
    containerId: r.container_id,
    seq: Number(r.seq),
    model: r.model,
    metadata: r.metadata ?? '{}',
    createdAt: r.created_at,
  }));

/** While the database is away, held batches are tried again after a jittered, doubling wait up to the max. */
const RETRY_BASE_MS = 200;
const RETRY_MAX_MS = 2_000;
/** A batch refused for another reason than an outage (a bug) is reported at most this often. */
const REFUSAL_WARN_MS = 60_000;
/** Session keys that can no longer match are deleted with a batch at most this often. */
const PRUNE_EVERY_MS = 60_000;

/**
 * Writes one batch in one transaction and returns the rows stored. Containers are locked in id
 * order, so two processes writing to the same containers cannot deadlock. Records of containers that no
 * longer exist are skipped. Throws what the database threw; a failed transaction stores nothing.
 */
async function writeBatch(
  db: Kysely<Database>,
  batch: NewLogRow[],
  sessionAsks: WeakMap<NewLogRow, SessionAsk>,
  prune: boolean,
): Promise<NewLogRow[]> {
  const groups = new Map<string, NewLogRow[]>();
  for (const draft of batch) {
    const group = groups.get(draft.container_id);
    if (group) group.push(draft);
    else groups.set(draft.container_id, [draft]);
  }
  if (groups.size === 0) return [];
  return await db.transaction().execute(async (trx) => {
    const rows: NewLogRow[] = [];
    for (const containerId of [...groups.keys()].sort()) {
      const drafts = groups.get(containerId)!;
      const first = await reserveSeqs(trx, containerId, drafts.length);
      if (first === null) continue;
      for (let i = 0; i < drafts.length; i++) {
        const draft = drafts[i]!;
        draft.seq = first + i;
        rows.push(draft);
      }
      // Under the container's counter lock: no other writer assigns this container's calls meanwhile.
      await assignSessions(
        trx,
        containerId,
        drafts.map((row) => ({ row, ask: sessionAsks.get(row) ?? { key: undefined } })),
      );
    }
    await insertLogRows(trx, rows);
    await recordGatewaySpans(trx, rows);
    if (prune) await pruneExpiredKeys(trx);
    return rows;
  });
}

/** Ids of the batch already stored (an earlier attempt committed, but its answer was lost with the connection). */
async function storedIds(db: Kysely<Database>, batch: NewLogRow[]): Promise<Set<string>> {
  const rows = await db
    .selectFrom('task_logs')
    .select('id')
    .where(
      'id',
      'in',
      batch.map((d) => d.id),
    )
    .execute();
  return new Set(rows.map((r) => r.id));
}

/** The database is away for now (restarting, unreachable, locked): worth waiting for, unlike a closed handle. */
const worthRetrying = (err: unknown) => isDatabaseUnavailable(err) && !isDatabaseClosed(err);

const reasonOf = (err: unknown) => (err instanceof Error ? err.message : String(err));

/**
 * The task log writer: `write` only appends to a bounded in-memory buffer; one loop per process writes
 * full batches at once and partial ones after `flushMs`. Seqs come from the per-container counter row
 * inside each batch's transaction, so they are strictly increasing without gaps or duplicates even with
 * several processes on one PostgreSQL. While the database is away, failed batches stay held, in order,
 * and are tried again with back-off until it returns; only records past `maxBuffered` are dropped (and
 * counted in `failed`, and reported once per outage). Callers never wait and never see an error.
 */
export function createLogWriter(db: Kysely<Database>, options: LogWriterOptions = {}): LogWriter {
  const batchSize = Math.max(1, options.batchSize ?? 500);
  const flushMs = Math.max(1, options.flushMs ?? 200);
  const maxBuffered = Math.max(1, options.maxBuffered ?? 50_000);
  const warn = options.warn;

  // Records are serialised as they arrive: the buffer holds compact strings rather than the request
  // and response objects, which would otherwise outlive a young-generation collection and cost more.
  const buffer: NewLogRow[] = [];
  /** Parts of a batch the database refused, tried apart before anything else (see `split`). */
  const splits: NewLogRow[][] = [];
  /** Records tried before in a transaction whose outcome is unknown (it failed other than by a refused row). */
  const tried = new WeakSet<NewLogRow>();
  /**
   * How each buffered record's session is found (its `X-Evalgate-Session` key, or null when it came with
   * its session id); the clues themselves are read from the row when its batch is written.
   */
  const sessionAsks = new WeakMap<NewLogRow, SessionAsk>();
  /** When the writer last deleted session keys too old to match (with a batch, at most once a minute). */
  let prunedAt = Date.now();
  let inFlight = 0;
  /** The ids of what is held, for `holds` (records are settled in the order they were accepted). */
  const heldIds = new HeldIds();
  let accepted = 0;
  let written = 0;
  let dropped = 0;
  let lost = 0;
  let closed = false;
  /** Set by close once its last flush is done: the loop stops retrying. */
  let stopping = false;
  /** A partial batch may be written now (its time is up, someone flushes, or held records are retried). */
  let due = false;
  let timer: NodeJS.Timeout | null = null;
  let pumping: Promise<void> | null = null;
  /** Attempts the database failed (unavailable): a flush does not wait out an outage. */
  let failures = 0;
  /** The current back-off (0 while the database takes batches), and how to cut it short. */
  let retryMs = 0;
  let wakeRetry: (() => void) | null = null;
  /** Flushes waiting for the end of an attempt. */
  const waiters = new Set<() => void>();
  const outage = options.outage ?? createOutageLog(maxBuffered, () => dropped, warn);
  let down = false;
  let refusalWarnedAt = 0;

  function notify(): void {
    for (const done of waiters) done();
    waiters.clear();
  }

  function arm(): void {
    if (timer !== null || buffer.length === 0 || stopping) return;
    timer = setTimeout(() => {
      timer = null;
      if (buffer.length === 0) return;
      due = true;
      schedule();
    }, flushMs);
    timer.unref();
  }

  /** Records waiting to be written: buffered, in flight, or in the parts of a refused batch. */
  function held(): number {
    let n = buffer.length + inFlight;
    for (const part of splits) n += part.length;
    return n;
  }

  /** There is a batch to write now: a refused batch's part, a full batch, or a partial one that is due. */
  const ready = () => splits.length > 0 || buffer.length >= batchSize || (due && buffer.length > 0);

  function schedule(): void {
    if (pumping || stopping) return;
    if (ready()) pumping = pump();
    else arm();
  }

  function pause(): Promise<void> {
    retryMs = retryMs === 0 ? RETRY_BASE_MS : Math.min(RETRY_MAX_MS, retryMs * 2);
    const ms = retryMs * (0.5 + Math.random() / 2);
    return new Promise((resolve) => {
      const t = setTimeout(done, ms);
      t.unref();
      function done() {
        clearTimeout(t);
        wakeRetry = null;
        resolve();
      }
      wakeRetry = done;
    });
  }

  /**
   * The database refused a batch for another reason than an outage (a row it cannot take): its halves
   * are tried apart, down to single records, so that only the records it refuses are dropped.
   */
  function split(batch: NewLogRow[], err: unknown): true {
    if (batch.length > 1) {
      const mid = Math.ceil(batch.length / 2);
      splits.unshift(batch.slice(0, mid), batch.slice(mid));
      return true;
    }
    lost += batch.length;
    const now = Date.now();
    if (now - refusalWarnedAt < REFUSAL_WARN_MS) return true;
    refusalWarnedAt = now;
    warn?.(`The database refused task log ${batch[0]?.id}, which is dropped: ${reasonOf(err)}`);
    return true;
  }

  /** Writes one batch; returns false when the database is away (the batch is held again, in front). */
  async function attempt(batch: NewLogRow[]): Promise<boolean> {
    try {
      const prune = Date.now() - prunedAt >= PRUNE_EVERY_MS;
      const stored = await writeBatch(db, batch, sessionAsks, prune);
      if (prune) prunedAt = Date.now();
      written += stored.length;
      lost += batch.length - stored.length;
      if (stored.length > 0) options.onCommitted?.(committedOf(stored));
      return true;
    } catch (err) {
      if (worthRetrying(err)) {
        for (const d of batch) tried.add(d);
        buffer.unshift(...batch);
        if (!down) {
          down = true;
          outage.down(reasonOf(err));
        }
        return false;
      }
      if (isUniqueViolation(err)) {
        if (batch.some((d) => tried.has(d))) return await dedupe(batch, err);
      } else {
        // Not a refused row: the commit may have gone through before the error (a connection cut as it
        // answered, whatever error that took), so its parts are checked for stored rows if refused.
        for (const d of batch) tried.add(d);
      }
      return split(batch, err);
    }
  }

  /** A retried batch hit its own rows: what an earlier, cut-off attempt committed is not stored twice. */
  async function dedupe(batch: NewLogRow[], err: unknown): Promise<boolean> {
    let present: Set<string>;
    try {
      present = await storedIds(db, batch);
    } catch (readErr) {
      if (!worthRetrying(readErr)) return split(batch, err);
      buffer.unshift(...batch);
      return false;
    }
    const rest = batch.filter((d) => !present.has(d.id));
    if (rest.length === batch.length) return split(batch, err);
    written += batch.length - rest.length;
    for (const d of rest) tried.delete(d);
    buffer.unshift(...rest);
    return true;
  }

  async function pump(): Promise<void> {
    try {
      while (!stopping && ready()) {
        const batch = splits.shift() ?? buffer.splice(0, batchSize);
        inFlight = batch.length;
        const ok = await attempt(batch);
        inFlight = 0;
        if (ok) {
          retryMs = 0;
          if (down) {
            down = false;
            outage.up();
          }
        } else {
          failures++;
          // Held records are tried again whole, a partial batch included.
          due = true;
        }
        options.onProgress?.();
        notify();
        if (!ok && !stopping) await pause();
      }
      due = false;
    } finally {
      pumping = null;
      notify();
    }
    arm();
  }

  /** Resolves when what was accepted so far is written or counted, or once the database failed an attempt. */
  async function flush(): Promise<void> {
    const target = accepted;
    const failuresBefore = failures;
    while (written + lost < target && failures === failuresBefore) {
      due = true;
      if (pumping) wakeRetry?.();
      else schedule();
      if (!pumping) return;
      await new Promise<void>((resolve) => waiters.add(resolve));
    }
  }

  return {
    write(record) {
      try {
        if (closed || held() >= maxBuffered) {
          dropped++;
          return;
        }
        const draft = draftOf(record);
        sessionAsks.set(draft, record.sessionId !== undefined ? null : { key: record.sessionKey });
        buffer.push(draft);
        accepted++;
        heldIds.accepted(draft.id);
        heldIds.trim(held());
        schedule();
      } catch {
        dropped++;
      }
    },
    flush,
    holds: (id) => heldIds.holds(id, held()),
    stats: () => ({ accepted, written, failed: dropped + lost, buffered: held() }),
    async close() {
      if (closed) return;
      closed = true;
      await flush();
      stopping = true;
      wakeRetry?.();
      if (pumping) await pumping;
      if (timer !== null) clearTimeout(timer);
      timer = null;
      // The database is still away: what it was holding for it is lost now.
      const left = held();
      if (left > 0) {
        buffer.length = 0;
        splits.length = 0;
        lost += left;
        warn?.(`Closing while the database is unavailable: ${left} task logs held for it are lost`);
        options.onProgress?.();
      }
    },
  };
}
