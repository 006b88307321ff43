import { createHash } from 'node:crypto';
import { type Kysely, sql, type Transaction } from 'kysely';
import type { Database } from '../db/schema.js';
import { parseJson } from '../shared/json.js';
import type { GatewaySpanFacts } from './gateway-spans.js';
import type { SessionAsk } from './sessions/assign.js';
import { type NewLogRow, replaceLog, reserveSeqs, setLogMetadata } from './task-log-store.js';
import { INGESTED_LOG_PREFIX } from './types.js';

/*
 * One task log per model call when a call is recorded twice: by the gateway (the application called the
 * model through it, under its own span's `traceparent`) and by the application's exported span of that
 * call (an ingested model-call span, whose task log is `log_otlp…`). The gateway's call is a child of the
 * span: the same trace, its parent span id the span's id. The two are joined in the task-log writer's
 * batch, whichever came first, into one record: the gateway's (its id, the one its answer gave the
 * client; its exact usage, cost, model and latency; the messages it received), with the span's name,
 * convention, provider and id in its metadata. The span stays in the trace without a model call of its
 * own: its child, the gateway's span, is the call (so the trace counts it once).
 */

/** A span's task log id: the same span sent again names the same log. */
export function ingestedLogId(projectId: string, traceId: string, spanId: string): string {
  const digest = createHash('sha256').update(`${projectId}:${traceId}:${spanId}`).digest('hex');
  return `${INGESTED_LOG_PREFIX}${digest.slice(0, 24)}`;
}

/** What the batch reads of a buffered record besides its row (see `RecordAside` in batch-attempts). */
export interface JoinAside {
  session: SessionAsk;
  span: GatewaySpanFacts | null;
}

export interface JoinedBatch {
  /** The records to insert: the batch less those joined to another. */
  insert: NewLogRow[];
  /** Gateway records joined into a span's stored log: not inserted, but their spans are written. */
  spanOnly: NewLogRow[];
  /** Records of the batch joined to another (each is stored, as part of that one). */
  joined: number;
}

const isIngested = (r: NewLogRow) => r.id.startsWith(INGESTED_LOG_PREFIX);
const keyOf = (projectId: string, traceId: string, spanId: string) => `${projectId}:${traceId}:${spanId}`;

/** The span a gateway call was made under (its `traceparent`'s parent), as a key; null when none. */
function callerKey(r: NewLogRow): string | null {
  if (isIngested(r) || !r.trace_id || !r.parent_span_id) return null;
  return keyOf(r.project_id, r.trace_id, r.parent_span_id);
}

/** An ingested span's log, keyed by its span. */
function spanKey(r: NewLogRow): string | null {
  if (!(isIngested(r) && r.trace_id && r.span_id)) return null;
  return keyOf(r.project_id, r.trace_id, r.span_id);
}

/** The gateway's metadata with what the span's log says of the call. */
function joinedMetadata(gateway: string, span: { metadata: string; span_id?: string | null }): string {
  const s = parseJson<Record<string, unknown>>(span.metadata, {});
  const details: Record<string, unknown> = { sources: ['gateway', 'otlp'], span_id: span.span_id ?? null };
  for (const k of ['span_name', 'convention', 'provider'] as const) if (s[k] !== undefined) details[k] = s[k];
  return JSON.stringify({ ...parseJson<Record<string, unknown>>(gateway, {}), ...details });
}

type SpanRef = { project: string; trace: string; span: string };

const unique = <T>(list: T[]) => [...new Set(list)];

/**
 * The spans whose calls joined a gateway call: their model call is the gateway span's now, so they lose
 * theirs, and their traces' summaries what they had added (the call, its tokens and cost).
 */
async function moveCallsToGateway(trx: Kysely<Database>, refs: SpanRef[]): Promise<void> {
  if (refs.length === 0) return;
  const wanted = new Set(refs.map((r) => keyOf(r.project, r.trace, r.span)));
  const rows = await trx
    .selectFrom('spans')
    .select(['project_id', 'trace_id', 'span_id', 'model_call'])
    .where('project_id', 'in', unique(refs.map((r) => r.project)))
    .where('trace_id', 'in', unique(refs.map((r) => r.trace)))
    .where('span_id', 'in', unique(refs.map((r) => r.span)))
    .where('model_call', 'is not', null)
    .execute();
  for (const row of rows) {
    if (!wanted.has(keyOf(row.project_id, row.trace_id, row.span_id))) continue;
    const call = parseJson<{ usage?: { input_tokens?: number; output_tokens?: number }; cost?: number }>(
      row.model_call,
      {},
    );
    const where = { project_id: row.project_id, trace_id: row.trace_id };
    await trx
      .updateTable('spans')
      .set({ model_call: null, task_log_id: null })
      .where('project_id', '=', where.project_id)
      .where('trace_id', '=', where.trace_id)
      .where('span_id', '=', row.span_id)
      .execute();
    await trx
      .updateTable('traces')
      .set({
        model_call_count: sql`model_call_count - 1`,
        input_tokens: sql`input_tokens - ${Number(call.usage?.input_tokens ?? 0)}`,
        output_tokens: sql`output_tokens - ${Number(call.usage?.output_tokens ?? 0)}`,
        cost: sql`cost - ${Number(call.cost ?? 0)}`,
      })
      .where('project_id', '=', where.project_id)
      .where('trace_id', '=', where.trace_id)
      .execute();
  }
}

const usageOf = (row: { usage?: string | null }) =>
  parseJson<{ prompt_tokens?: number; completion_tokens?: number } | null>(row.usage ?? null, null);

/**
 * A stored span's log becomes the gateway's record (its row kept: seq, container, session), and its
 * session's totals take the gateway's figures instead of the span's.
 */
async function rewriteStored(trx: Transaction<Database>, stored: StoredSpanLog, gateway: NewLogRow) {
  const row: NewLogRow = { ...gateway, metadata: joinedMetadata(gateway.metadata ?? '{}', stored) };
  await replaceLog(trx, stored.project_id, stored.id, row);
  gateway.session_id = stored.session_id;
  gateway.container_id = stored.container_id;
  if (!stored.session_id) return;
  const [before, after] = [usageOf(stored), usageOf(gateway)];
  const d = (k: 'prompt_tokens' | 'completion_tokens') => Number(after?.[k] ?? 0) - Number(before?.[k] ?? 0);
  const errors = (gateway.status === 'error' ? 1 : 0) - (stored.status === 'error' ? 1 : 0);
  await trx
    .updateTable('task_sessions')
    .set({
      prompt_tokens: sql`prompt_tokens + ${d('prompt_tokens')}`,
      completion_tokens: sql`completion_tokens + ${d('completion_tokens')}`,
      cost: sql`cost + ${Number(gateway.cost) - Number(stored.cost)}`,
      latency_ms: sql`latency_ms + ${Number(gateway.latency_ms) - Number(stored.latency_ms)}`,
      error_count: sql`error_count + ${errors}`,
    })
    .where('id', '=', stored.session_id)
    .execute();
}

interface StoredSpanLog {
  id: string;
  project_id: string;
  container_id: string;
  session_id: string | null;
  span_id: string | null;
  metadata: string;
  usage: string | null;
  cost: number;
  latency_ms: number;
  status: 'success' | 'error';
}

/** Gateway records of the batch whose caller's span has its log stored already: joined into it. */
async function joinToStoredSpans(
  trx: Transaction<Database>,
  gateway: Map<string, NewLogRow>,
  moved: SpanRef[],
): Promise<NewLogRow[]> {
  if (gateway.size === 0) return [];
  const ids = new Map<string, NewLogRow>();
  for (const r of gateway.values()) ids.set(ingestedLogId(r.project_id, r.trace_id!, r.parent_span_id!), r);
  const stored = await trx
    .selectFrom('task_logs')
    .select(['id', 'project_id', 'container_id', 'session_id', 'span_id', 'metadata', 'usage'])
    .select(['cost', 'latency_ms', 'status'])
    .where('id', 'in', [...ids.keys()])
    .execute();
  const spanOnly: NewLogRow[] = [];
  for (const s of stored) {
    const r = ids.get(s.id);
    if (!r || r.project_id !== s.project_id) continue;
    await rewriteStored(trx, { ...s, session_id: s.session_id ?? null, span_id: s.span_id ?? null }, r);
    moved.push({ project: r.project_id, trace: r.trace_id!, span: r.parent_span_id! });
    spanOnly.push(r);
  }
  return spanOnly;
}

/** Span logs of the batch whose gateway call is stored already: the gateway's log takes their details. */
async function joinToStoredCalls(
  trx: Transaction<Database>,
  spans: Map<string, NewLogRow>,
  moved: SpanRef[],
): Promise<Set<NewLogRow>> {
  const joined = new Set<NewLogRow>();
  if (spans.size === 0) return joined;
  const list = [...spans.values()];
  const calls = await trx
    .selectFrom('task_logs')
    .select(['id', 'project_id', 'trace_id', 'parent_span_id', 'metadata'])
    .where('project_id', 'in', unique(list.map((r) => r.project_id)))
    .where('trace_id', 'in', unique(list.map((r) => r.trace_id!)))
    .where('parent_span_id', 'in', unique(list.map((r) => r.span_id!)))
    .execute();
  for (const c of calls) {
    if (c.id.startsWith(INGESTED_LOG_PREFIX) || !c.trace_id || !c.parent_span_id) continue;
    const span = spans.get(keyOf(c.project_id, c.trace_id, c.parent_span_id));
    if (!span || joined.has(span)) continue;
    await setLogMetadata(trx, c.project_id, c.id, joinedMetadata(c.metadata, span));
    moved.push({ project: span.project_id, trace: span.trace_id!, span: span.span_id! });
    joined.add(span);
  }
  return joined;
}

/**
 * Joins the batch's records that are one call recorded twice: within the batch, and with what is
 * stored. Only gateway calls made under a caller's span and span-made logs are looked up (one indexed
 * read each kind per batch); a batch of neither reads nothing.
 */
export async function joinCalls(
  trx: Transaction<Database>,
  batch: NewLogRow[],
  asides: WeakMap<NewLogRow, JoinAside>,
): Promise<JoinedBatch> {
  const gateway = new Map<string, NewLogRow>();
  const spans = new Map<string, NewLogRow>();
  for (const r of batch) {
    const caller = callerKey(r);
    if (caller !== null) gateway.set(caller, r);
    const own = spanKey(r);
    if (own !== null) spans.set(own, r);
  }
  if (gateway.size === 0 && spans.size === 0) return { insert: batch, spanOnly: [], joined: 0 };
  // The containers' counters are locked first (in id order, as the batch locks them): a writer in
  // another process holding the other half of a call commits before this one looks, or waits for it.
  for (const id of unique(batch.map((r) => r.container_id)).sort()) await reserveSeqs(trx, id, 0);
  const dropped = new Set<NewLogRow>();
  const moved: SpanRef[] = [];
  // Both in this batch: the gateway's record takes the span's details (and its session key if it had none).
  for (const [key, r] of gateway) {
    const span = spans.get(key);
    if (!span) continue;
    r.metadata = joinedMetadata(r.metadata ?? '{}', span);
    const ask = asides.get(r);
    const spanAsk = asides.get(span)?.session;
    if (ask && ask.session !== null && ask.session.key === undefined && spanAsk?.key !== undefined)
      ask.session = { key: spanAsk.key };
    dropped.add(span);
    spans.delete(key);
    gateway.delete(key);
    moved.push({ project: span.project_id, trace: span.trace_id!, span: span.span_id! });
  }
  for (const s of await joinToStoredCalls(trx, spans, moved)) dropped.add(s);
  const spanOnly = await joinToStoredSpans(trx, gateway, moved);
  for (const r of spanOnly) dropped.add(r);
  await moveCallsToGateway(trx, moved);
  return { insert: batch.filter((r) => !dropped.has(r)), spanOnly, joined: dropped.size };
}
