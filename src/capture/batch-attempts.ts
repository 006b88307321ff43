import type { Kysely } from 'kysely';
import { isDatabaseClosed, isDatabaseUnavailable, isUniqueViolation } from '../db/database.js';
import type { Database } from '../db/schema.js';
import { joinCalls } from './call-join.js';
import { type GatewaySpanFacts, recordGatewaySpans } from './gateway-spans.js';
import type { OutageLog } from './outage-log.js';
import { assignSessions, pruneExpiredKeys, type SessionAsk } from './sessions/assign.js';
import { insertLogRows, type NewLogRow, reserveSeqs } from './task-log-store.js';
import type { CommittedLog } from './types.js';

/**
 * One attempt of the task-log writer at one batch, and what its outcome means: stored (counted, told to
 * `onCommitted`), held again while the database is away, split apart when the database refused a row,
 * or deduplicated when a retried batch meets rows an earlier, cut-off attempt committed.
 */

/** What the writer holds and counts, shared with its attempts. */
export interface WriterHold {
  /** Records waiting for a batch, in the order they were accepted. */
  buffer: NewLogRow[];
  /** Parts of a batch the database refused, tried apart before anything else (see `split`). */
  splits: NewLogRow[][];
  /** What the batch needs of each buffered record besides its row (one entry per record). */
  asides: WeakMap<NewLogRow, RecordAside>;
  written: number;
  lost: number;
}

/** What a buffered record's batch reads besides its row, taken from the record as it was accepted. */
export interface RecordAside {
  /**
   * How its session is found (its `X-Evalgate-Session` key, or null when it came with its session id);
   * the clues themselves are read from the row when its batch is written.
   */
  session: SessionAsk;
  /** What its span is made of (null: the call has no span of its own to write). */
  span: GatewaySpanFacts | null;
}

export const createHold = (): WriterHold => ({
  buffer: [],
  splits: [],
  asides: new WeakMap(),
  written: 0,
  lost: 0,
});

export interface BatchAttempts {
  /** Writes one batch; returns false when the database is away (the batch is held again, in front). */
  attempt(batch: NewLogRow[]): Promise<boolean>;
  /** A batch went through: an outage reported is over. */
  recovered(): void;
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
  asides: WeakMap<NewLogRow, RecordAside>,
  prune: boolean,
): Promise<{ rows: NewLogRow[]; joined: number }> {
  if (batch.length === 0) return { rows: [], joined: 0 };
  return await db.transaction().execute(async (trx) => {
    // A call recorded by both the gateway and its caller's span is stored once (see call-join.ts).
    const { insert, spanOnly, joined } = await joinCalls(trx, batch, asides);
    const groups = new Map<string, NewLogRow[]>();
    for (const draft of insert) {
      const group = groups.get(draft.container_id);
      if (group) group.push(draft);
      else groups.set(draft.container_id, [draft]);
    }
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
        drafts.map((row) => ({ row, ask: asides.get(row)?.session ?? { key: undefined } })),
      );
    }
    await insertLogRows(trx, rows);
    await recordGatewaySpans(trx, [...rows, ...spanOnly], (row) => asides.get(row)?.span ?? null);
    if (prune) await pruneExpiredKeys(trx);
    return { rows, joined };
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

export function createBatchAttempts(
  db: Kysely<Database>,
  hold: WriterHold,
  outage: OutageLog,
  options: {
    warn?: ((message: string) => void) | undefined;
    onCommitted?: ((logs: CommittedLog[]) => void) | undefined;
  },
): BatchAttempts {
  const { buffer, splits } = hold;
  const { warn } = options;
  /** Records tried before in a transaction whose outcome is unknown (it failed other than by a refused row). */
  const tried = new WeakSet<NewLogRow>();
  /** When the writer last deleted session keys too old to match (with a batch, at most once a minute). */
  let prunedAt = Date.now();
  let down = false;
  let refusalWarnedAt = 0;

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
    hold.lost += batch.length;
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
      const { rows: stored, joined } = await writeBatch(db, batch, hold.asides, prune);
      if (prune) prunedAt = Date.now();
      // A record joined to another call's is stored, as part of that one.
      hold.written += stored.length + joined;
      hold.lost += batch.length - stored.length - joined;
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
    hold.written += batch.length - rest.length;
    for (const d of rest) tried.delete(d);
    buffer.unshift(...rest);
    return true;
  }

  return {
    attempt,
    recovered() {
      if (!down) return;
      down = false;
      outage.up();
    },
  };
}

/** The writer's wait between attempts while the database is away: jittered, doubling up to the max. */
export function createBackoff(): { pause(): Promise<void>; reset(): void; wake(): void } {
  let retryMs = 0;
  let wakeRetry: (() => void) | null = null;
  return {
    pause() {
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
    },
    reset() {
      retryMs = 0;
    },
    wake() {
      wakeRetry?.();
    },
  };
}
