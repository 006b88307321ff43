import type { Kysely } from 'kysely';
import { insertLogRows, type NewLogRow, reserveSeqs } from '../../catalog/logs/repository.js';
import type { Database } from '../../db/schema.js';
import { assembleCompletion } from '../assemble.js';
import { completionText, readUsage } from '../providers/openai-compatible.js';
import { ssePayloads } from '../sse.js';
import type { LogWriter, TaskLogRecord } from './types.js';

export interface LogWriterOptions {
  /** Records per transaction; a full batch is written at once. */
  batchSize?: number;
  /** A partial batch waits at most this long. */
  flushMs?: number;
  /** Records held (buffered and in flight) before new ones are dropped and counted as failed. */
  maxBuffered?: number;
  /** Called after every batch (read `stats()` for the counts). */
  onProgress?: () => void;
}

// PostgreSQL text cannot hold U+0000, and a NaN would break the NOT NULL numeric columns on SQLite.
const clean = (s: string) => (s.includes('\u0000') ? s.replaceAll('\u0000', '\uFFFD') : s);
const finite = (n: number) => (Number.isFinite(n) ? n : 0);

/** The request's messages as JSON text, from the request's own text ('null' when it has none). */
function messagesOf(requestText: string): string {
  try {
    const request = JSON.parse(requestText) as { messages?: unknown } | null;
    return JSON.stringify(request?.messages ?? null);
  } catch {
    return 'null';
  }
}

/** The recorded response and output: a streamed answer's chunks assembled into one completion. */
function answerOf(r: TaskLogRecord): { response: string; output: string | null } {
  if (r.responseSse !== undefined) {
    const completion = assembleCompletion(ssePayloads(r.responseSse), r.model);
    // The usage chunk is not among them when the client did not ask for it.
    completion.usage ??= readUsage(r.usage);
    const text = completionText(completion);
    // A stream that failed before any text has no output.
    return {
      response: JSON.stringify(completion),
      output: r.status === 'error' && text === '' ? null : text,
    };
  }
  const response = r.responseText !== undefined ? r.responseText : JSON.stringify(r.response ?? null);
  return { response, output: r.output };
}

function inputOf(r: TaskLogRecord): string {
  if (r.input !== undefined || r.requestText === undefined) return JSON.stringify(r.input ?? null);
  return messagesOf(r.requestText);
}

/**
 * A record as a row, its seq still 0 (set in place when its batch is written: one object per row, not
 * two); throws when a field cannot be serialised (e.g. a cycle).
 */
function draftOf(r: TaskLogRecord): NewLogRow {
  const { response, output } = answerOf(r);
  return {
    id: r.id,
    project_id: r.projectId,
    container_id: r.containerId,
    seq: 0,
    model: clean(r.model),
    input: clean(inputOf(r)),
    output: output === null ? null : clean(output),
    request: r.requestText !== undefined ? clean(r.requestText) : JSON.stringify(r.request ?? null),
    response: clean(response),
    usage: r.usage === null ? null : JSON.stringify(r.usage),
    latency_ms: finite(r.latencyMs),
    cost: finite(r.cost),
    status: r.status,
    error: r.error === null ? null : JSON.stringify(r.error),
    metadata: JSON.stringify(r.metadata ?? {}),
    // Normalised, so that `since` filters (text comparison) hold whatever ISO form the caller used.
    created_at: isoOr(r.createdAt),
  };
}

/** `toISOString()`'s own form (the gateway's records come in it), kept as it is. */
const CANONICAL_ISO = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;

function isoOr(text: string): string {
  if (CANONICAL_ISO.test(text)) return text;
  const t = Date.parse(text);
  return Number.isNaN(t) ? new Date().toISOString() : new Date(t).toISOString();
}

/**
 * Writes one batch in one transaction and returns how many rows were stored. Containers are locked in id
 * order, so two processes writing to the same containers cannot deadlock. Records of containers that no
 * longer exist are skipped. Never throws: a failed transaction stores nothing and returns 0.
 */
async function writeBatch(db: Kysely<Database>, batch: NewLogRow[]): Promise<number> {
  const groups = new Map<string, NewLogRow[]>();
  for (const draft of batch) {
    const group = groups.get(draft.container_id);
    if (group) group.push(draft);
    else groups.set(draft.container_id, [draft]);
  }
  if (groups.size === 0) return 0;
  try {
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
      }
      await insertLogRows(trx, rows);
      return rows.length;
    });
  } catch {
    return 0;
  }
}

/**
 * The task log writer: `write` only appends to a bounded in-memory buffer; one loop per process writes
 * full batches at once and partial ones after `flushMs`. Seqs come from the per-container counter row
 * inside each batch's transaction, so they are strictly increasing without gaps or duplicates even with
 * several processes on one PostgreSQL. Whatever cannot be stored (buffer full, database down) is dropped
 * and counted in `failed`; callers never wait and never see an error.
 */
export function createLogWriter(db: Kysely<Database>, options: LogWriterOptions = {}): LogWriter {
  const batchSize = Math.max(1, options.batchSize ?? 500);
  const flushMs = Math.max(1, options.flushMs ?? 200);
  const maxBuffered = Math.max(1, options.maxBuffered ?? 50_000);

  // Records are serialised as they arrive: the buffer holds compact strings rather than the request
  // and response objects, which would otherwise outlive a young-generation collection and cost more.
  const buffer: NewLogRow[] = [];
  let inFlight = 0;
  let accepted = 0;
  let written = 0;
  let dropped = 0;
  let lost = 0;
  let closed = false;
  /** A partial batch may be written now (its time is up, or someone flushes). */
  let due = false;
  let timer: NodeJS.Timeout | null = null;
  let pumping: Promise<void> | null = null;

  function arm(): void {
    if (timer !== null || buffer.length === 0) return;
    timer = setTimeout(() => {
      timer = null;
      if (buffer.length === 0) return;
      due = true;
      schedule();
    }, flushMs);
    timer.unref();
  }

  function schedule(): void {
    if (pumping) return;
    if (buffer.length >= batchSize || (due && buffer.length > 0)) pumping = pump();
    else arm();
  }

  async function pump(): Promise<void> {
    try {
      while (buffer.length >= batchSize || (due && buffer.length > 0)) {
        const batch = buffer.splice(0, batchSize);
        inFlight = batch.length;
        const stored = await writeBatch(db, batch);
        written += stored;
        lost += batch.length - stored;
        inFlight = 0;
        options.onProgress?.();
      }
      due = false;
    } finally {
      pumping = null;
    }
    arm();
  }

  async function flush(): Promise<void> {
    const target = accepted;
    while (written + lost < target) {
      if (pumping) {
        await pumping;
        continue;
      }
      due = true;
      schedule();
      if (!pumping) return;
    }
  }

  return {
    write(record) {
      try {
        if (closed || buffer.length + inFlight >= maxBuffered) {
          dropped++;
          return;
        }
        buffer.push(draftOf(record));
        accepted++;
        schedule();
      } catch {
        dropped++;
      }
    },
    flush,
    stats: () => ({ accepted, written, failed: dropped + lost, buffered: buffer.length + inFlight }),
    async close() {
      closed = true;
      await flush();
      if (timer !== null) clearTimeout(timer);
      timer = null;
    },
  };
}
