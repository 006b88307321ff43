import { CompiledQuery, type Kysely, sql } from 'kysely';
import { insertRows, rowRunnerOf, statementRows } from '../db/bulk.js';
import type { Database } from '../db/schema.js';
import { statementTexts } from '../db/statements.js';
import type { NewSpanRow, StoredSpan, TraceStore } from './trace-port.js';
import { pruneTraces } from './trace-retention.js';

/*
 * The trace store on the SQL database (SQLite or PostgreSQL): the `spans` table, and the `traces` table
 * of per-trace summaries, added to in the same transaction as the spans.
 */

/** The span columns, in the order of every insert's parameters. */
const SPAN_COLUMNS = [
  'project_id',
  'trace_id',
  'span_id',
  'parent_span_id',
  'container_id',
  'name',
  'kind',
  'operation',
  'started_at',
  'ended_at',
  'duration_ms',
  'status_code',
  'status_message',
  'attributes',
  'events',
  'resource',
  'scope',
  'session_id',
  'model',
  'model_call',
  'task_log_id',
  'received_at',
] as const satisfies readonly (keyof NewSpanRow)[];

// 22 parameters per row: 500 rows stay below SQLite's and PostgreSQL's bound-parameter limits.
const INSERT_ROWS = 500;
// 16 parameters per trace.
const UPSERT_ROWS = 1_000;

const keyOf = (projectId: string, traceId: string, spanId: string) => `${projectId}:${traceId}:${spanId}`;

function valuesOf(row: NewSpanRow): unknown[] {
  const out = new Array<unknown>(SPAN_COLUMNS.length);
  for (let i = 0; i < SPAN_COLUMNS.length; i++) out[i] = row[SPAN_COLUMNS[i]!] ?? null;
  return out;
}

/** A stand-in row (every column present, in order) to compile an insert's text from. */
function templateOf(): NewSpanRow {
  const row: Record<string, unknown> = {};
  for (const c of SPAN_COLUMNS) row[c] = '';
  return row as unknown as NewSpanRow;
}

/** The insert of `n` span rows that skips stored ones, compiled once per dialect and row count. */
function insertText(db: Kysely<Database>, n: number, returning: boolean): string {
  const cache = statementTexts(db);
  const name = `traces:spans|${n}|${returning}`;
  const hit = cache.get(name);
  if (hit !== undefined) return hit;
  const template = templateOf();
  const built = db
    .insertInto('spans')
    .values(Array.from({ length: n }, () => template))
    .onConflict((oc) => oc.columns(['project_id', 'trace_id', 'span_id']).doNothing());
  const text = (returning ? built.returning(['project_id', 'trace_id', 'span_id']) : built).compile().sql;
  cache.set(name, text);
  return text;
}

/**
 * Inserts the spans (ON CONFLICT DO NOTHING: a span stored before, an exporter's retry, is skipped) and
 * returns those that were new. On SQLite, inside the batch's transaction, one prepared single-row
 * statement runs per row and reports whether it inserted; on PostgreSQL, multi-row statements return the
 * keys they inserted.
 */
async function insertSpans(db: Kysely<Database>, spans: StoredSpan[]): Promise<StoredSpan[]> {
  const runner = rowRunnerOf(db);
  if (runner) {
    const changed: boolean[] = [];
    runner(
      insertText(db, 1, false),
      spans.map((s) => valuesOf(s.row)),
      changed,
    );
    return spans.filter((_, i) => changed[i] === true);
  }
  const fresh: StoredSpan[] = [];
  for (let i = 0, size = 0; i < spans.length; i += size) {
    // Statements of a few sizes, so that their texts are compiled once (see `statementRows`).
    size = statementRows(spans.length - i, INSERT_ROWS);
    const batch = spans.slice(i, i + size);
    const parameters: unknown[] = [];
    for (const s of batch) for (const v of valuesOf(s.row)) parameters.push(v);
    const result = await db.executeQuery<{ project_id: string; trace_id: string; span_id: string }>(
      CompiledQuery.raw(insertText(db, batch.length, true), parameters),
    );
    if (result.rows.length === batch.length) {
      fresh.push(...batch);
      continue;
    }
    const inserted = new Set(result.rows.map((r) => keyOf(r.project_id, r.trace_id, r.span_id)));
    for (const s of batch)
      if (inserted.has(keyOf(s.row.project_id, s.row.trace_id, s.row.span_id))) fresh.push(s);
  }
  return fresh;
}

/** What new spans (or gateway calls) add to one trace's summary row. */
export interface TraceDelta {
  project_id: string;
  trace_id: string;
  container_id: string | null;
  name: string | null;
  service_name: string | null;
  session_id: string | null;
  started_at: string;
  ended_at: string;
  span_count: number;
  error_count: number;
  model_call_count: number;
  input_tokens: number;
  output_tokens: number;
  cost: number;
  updated_at: string;
}

/** The empty delta of a trace, to add spans to (keys in one order: the upsert's parameters follow it). */
export function emptyDelta(projectId: string, traceId: string, startedAt: string, now: string): TraceDelta {
  return {
    project_id: projectId,
    trace_id: traceId,
    container_id: null,
    name: null,
    service_name: null,
    session_id: null,
    started_at: startedAt,
    ended_at: startedAt,
    span_count: 0,
    error_count: 0,
    model_call_count: 0,
    input_tokens: 0,
    output_tokens: 0,
    cost: 0,
    updated_at: now,
  };
}

/** What the new spans add to each trace's summary. */
function deltas(spans: StoredSpan[], now: string): TraceDelta[] {
  const out = new Map<string, TraceDelta>();
  for (const { row: r, serviceName, call } of spans) {
    const k = `${r.project_id}:${r.trace_id}`;
    let d = out.get(k);
    if (!d) {
      d = emptyDelta(r.project_id, r.trace_id, r.started_at, now);
      out.set(k, d);
    }
    if (r.parent_span_id === null || r.parent_span_id === undefined) {
      d.name = r.name;
      d.service_name = serviceName;
    }
    d.container_id ??= r.container_id ?? null;
    d.session_id ??= r.session_id ?? null;
    if (r.started_at < d.started_at) d.started_at = r.started_at;
    if (r.ended_at > d.ended_at) d.ended_at = r.ended_at;
    d.span_count++;
    if (r.status_code === 'error') d.error_count++;
    if (call) {
      d.model_call_count++;
      d.input_tokens += call.inputTokens;
      d.output_tokens += call.outputTokens;
      d.cost += call.cost;
    }
  }
  return [...out.values()];
}

/**
 * Adds deltas to their traces' summary rows (created when absent), in multi-row upserts whose text is
 * compiled once; in key order, so that two writers adding to the same traces cannot deadlock.
 */
export async function addToTraces(db: Kysely<Database>, list: TraceDelta[]): Promise<void> {
  if (list.length === 0) return;
  const sorted = [...list].sort((a, b) =>
    a.project_id === b.project_id
      ? a.trace_id < b.trace_id
        ? -1
        : a.trace_id > b.trace_id
          ? 1
          : 0
      : a.project_id < b.project_id
        ? -1
        : 1,
  );
  await insertRows(db, 'traces:upsert', sorted, UPSERT_ROWS, (batch) =>
    db
      .insertInto('traces')
      .values(batch)
      .onConflict((oc) =>
        oc.columns(['project_id', 'trace_id']).doUpdateSet({
          container_id: sql`coalesce(traces.container_id, excluded.container_id)`,
          name: sql`coalesce(excluded.name, traces.name)`,
          service_name: sql`coalesce(excluded.service_name, traces.service_name)`,
          session_id: sql`coalesce(traces.session_id, excluded.session_id)`,
          started_at: sql`case when excluded.started_at < traces.started_at then excluded.started_at else traces.started_at end`,
          ended_at: sql`case when excluded.ended_at > traces.ended_at then excluded.ended_at else traces.ended_at end`,
          span_count: sql`traces.span_count + excluded.span_count`,
          error_count: sql`traces.error_count + excluded.error_count`,
          model_call_count: sql`traces.model_call_count + excluded.model_call_count`,
          input_tokens: sql`traces.input_tokens + excluded.input_tokens`,
          output_tokens: sql`traces.output_tokens + excluded.output_tokens`,
          cost: sql`traces.cost + excluded.cost`,
          updated_at: sql`excluded.updated_at`,
        }),
      ),
  );
}

/**
 * Stores spans inside the caller's transaction: those already stored (the same span sent again) are
 * skipped, the others inserted and added to their traces' summaries. Returns the spans that were new.
 */
async function storeSpansIn(trx: Kysely<Database>, spans: StoredSpan[]): Promise<StoredSpan[]> {
  // The same span twice in one batch: the first is kept.
  const seen = new Set<string>();
  const unique = spans.filter((s) => {
    const k = keyOf(s.row.project_id, s.row.trace_id, s.row.span_id);
    if (seen.has(k)) return false;
    seen.add(k);
    return true;
  });
  const fresh = await insertSpans(trx, unique);
  await addToTraces(trx, deltas(fresh, new Date().toISOString()));
  return fresh;
}

/**
 * The trace store on `db`. Given a transaction (the task-log writer's batch, whose gateway calls' spans
 * commit with their task logs), it stores within it; given the database, each `store` is a transaction
 * of its own.
 */
export function createSqlTraceStore(db: Kysely<Database>): TraceStore {
  return {
    async store(spans) {
      if (spans.length === 0) return [];
      if (db.isTransaction) return storeSpansIn(db, spans);
      return db.transaction().execute((trx) => storeSpansIn(trx, spans));
    },
    async setModelCall(projectId, traceId, spanId, modelCall) {
      await db
        .updateTable('spans')
        .set({ model_call: modelCall })
        .where('project_id', '=', projectId)
        .where('trace_id', '=', traceId)
        .where('span_id', '=', spanId)
        .execute();
    },
    prune: (cutoff) => pruneTraces(db, cutoff),
  };
}
