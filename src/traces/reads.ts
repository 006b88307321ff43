import { type Kysely, type Selectable, sql } from 'kysely';
import { GATEWAY_SCOPE } from '../capture/gateway-spans.js';
import { findContainer } from '../catalog/containers/repository.js';
import type { Database, SpanTable, TaskLogTable, TraceTable } from '../db/schema.js';
import type { ListResponse, Page } from '../http/schemas.js';
import { DIALECTS, operationOf } from '../llm/dialects/registry.js';
import { ApiError } from '../shared/errors.js';
import { ATTR_GEN_AI_OPERATION_NAME, ATTR_GEN_AI_REQUEST_MODEL } from '../shared/genai-attributes.js';
import { usd } from '../shared/numbers.js';
import type { JsonValue } from './mapping/types.js';
import { placeSessions, sessionsNamed, sessionsOfTraces } from './trace-sessions.js';
import type { ListTracesQuery, SpanModelCall, Trace, TraceSpan, TraceSummary, TraceTotals } from './types.js';

type SpanRow = Selectable<SpanTable>;
type TraceRow = Selectable<TraceTable>;
type LogRow = Selectable<TaskLogTable>;

const json = <T>(text: string | null, fallback: T): T => {
  if (text === null) return fallback;
  try {
    return JSON.parse(text) as T;
  } catch {
    return fallback;
  }
};

function summaryOf(row: TraceRow, models: string[], sessionId: string | null): TraceSummary {
  const input = Number(row.input_tokens);
  const output = Number(row.output_tokens);
  return {
    object: 'trace',
    id: row.trace_id,
    project_id: row.project_id,
    container_id: row.container_id,
    name: row.name,
    service_name: row.service_name,
    session_id: sessionId,
    started_at: row.started_at,
    ended_at: row.ended_at,
    duration_ms: Math.max(0, Date.parse(row.ended_at) - Date.parse(row.started_at)),
    models,
    totals: {
      span_count: Number(row.span_count),
      error_count: Number(row.error_count),
      model_call_count: Number(row.model_call_count),
      usage: { input_tokens: input, output_tokens: output, total_tokens: input + output },
      cost: usd(Number(row.cost)),
    },
  };
}

/** The models of each trace's model calls, from spans_model. */
async function modelsOf(
  db: Kysely<Database>,
  projectId: string,
  traceIds: string[],
): Promise<Map<string, Set<string>>> {
  const models = new Map<string, Set<string>>();
  if (traceIds.length === 0) return models;
  const found = await db
    .selectFrom('spans')
    .select(['trace_id', 'model'])
    .distinct()
    .where('project_id', '=', projectId)
    .where('trace_id', 'in', traceIds)
    .where('model', 'is not', null)
    .execute();
  for (const f of found) {
    const set = models.get(f.trace_id) ?? new Set<string>();
    if (f.model !== null) set.add(f.model);
    models.set(f.trace_id, set);
  }
  return models;
}

/** A page of the project's traces, newest first, with the filters of `GET /v1/traces`. */
export async function listTraces(
  db: Kysely<Database>,
  projectId: string,
  q: ListTracesQuery,
  page: Page,
): Promise<ListResponse<TraceSummary>> {
  let containerId: string | null = null;
  if (q.container !== undefined) {
    const c = await findContainer(db, projectId, q.container);
    if (!c) throw ApiError.notFound('Container', q.container);
    containerId = c.id;
  }
  let base = db.selectFrom('traces').where('project_id', '=', projectId);
  if (containerId !== null) base = base.where('container_id', '=', containerId);
  if (q.session !== undefined) {
    // The traces with a call in the session (by its id, or the sessions its key names): the session the
    // list shows is that of the calls, never a span's own conversation id.
    const named = await sessionsNamed(db, projectId, q.session);
    base =
      named.length === 0
        ? base.where(sql<boolean>`1 = 0`)
        : base.where('trace_id', 'in', (eb) =>
            eb
              .selectFrom('task_logs')
              .select('task_logs.trace_id')
              .where('task_logs.project_id', '=', projectId)
              .where('task_logs.session_id', 'in', named)
              .$narrowType<{ trace_id: string }>(),
          );
  }
  if (q.since !== undefined) base = base.where('started_at', '>=', new Date(q.since).toISOString());
  if (q.until !== undefined) base = base.where('started_at', '<', new Date(q.until).toISOString());
  // A literal (not a parameter): the planners match it to the partial index traces_errors (migration 029).
  if (q.errors === true) base = base.where(sql<boolean>`error_count > 0`);
  if (q.errors === false) base = base.where('error_count', '=', 0);
  if (q.min_spans !== undefined) base = base.where('span_count', '>=', q.min_spans);
  if (q.model !== undefined) {
    // The traces with a span of the model (an ingested model call or a gateway call), from spans_model.
    const model = q.model;
    base = base.where('trace_id', 'in', (eb) =>
      eb
        .selectFrom('spans')
        .select('spans.trace_id')
        .where('spans.project_id', '=', projectId)
        .where('spans.model', '=', model),
    );
  }
  const [rows, count] = await Promise.all([
    base
      .selectAll()
      .orderBy('started_at', 'desc')
      .orderBy('trace_id', 'desc')
      .limit(page.limit)
      .offset(page.offset)
      .execute(),
    base.select((eb) => eb.fn.countAll<number | string>().as('n')).executeTakeFirstOrThrow(),
  ]);
  const ids = rows.map((r) => r.trace_id);
  const [models, sessions] = await Promise.all([
    modelsOf(db, projectId, ids),
    sessionsOfTraces(db, projectId, ids),
  ]);
  return {
    object: 'list',
    data: rows.map((r) =>
      summaryOf(r, [...(models.get(r.trace_id) ?? [])].sort(), sessions.get(r.trace_id) ?? null),
    ),
    total: Number(count.n),
  };
}

type Unplaced = Omit<TraceSpan, 'depth' | 'offset_ms'>;

function spanOf(row: SpanRow): Unplaced {
  return {
    object: 'trace.span',
    span_id: row.span_id,
    parent_span_id: row.parent_span_id,
    source: row.scope?.includes(GATEWAY_SCOPE) ? 'gateway' : 'otlp',
    name: row.name,
    kind: row.kind as TraceSpan['kind'],
    operation: row.operation,
    container_id: row.container_id,
    session_id: row.session_id,
    started_at: row.started_at,
    ended_at: row.ended_at,
    duration_ms: row.duration_ms,
    status: { code: row.status_code as TraceSpan['status']['code'], message: row.status_message },
    attributes: json<Record<string, JsonValue>>(row.attributes, {}),
    events: json<TraceSpan['events']>(row.events, []),
    resource: json<Record<string, JsonValue>>(row.resource, {}),
    scope: json<TraceSpan['scope']>(row.scope, null),
    model_call: json<SpanModelCall | null>(row.model_call, null),
  };
}

/**
 * A gateway call of the trace (a task log with its trace id) as a client span; `events` (JSON text): its
 * span row's, the guards' verdicts.
 */
function gatewaySpanOf(row: LogRow, events: string | null): Unplaced {
  const usage = json<{ prompt_tokens?: number; completion_tokens?: number } | null>(row.usage, null);
  const input = usage?.prompt_tokens ?? 0;
  const output = usage?.completion_tokens ?? 0;
  const metadata = json<Record<string, JsonValue>>(row.metadata, {});
  const route = typeof metadata.route === 'string' ? metadata.route : DIALECTS.chat.name;
  const started = Date.parse(row.created_at);
  const error = json<{ message?: string } | null>(row.error, null);
  return {
    object: 'trace.span',
    span_id: row.span_id ?? row.id,
    parent_span_id: row.parent_span_id ?? null,
    source: 'gateway',
    name: `${route} ${row.model}`,
    kind: 'client',
    operation: operationOf(route),
    container_id: row.container_id,
    session_id: row.session_id ?? null,
    started_at: row.created_at,
    ended_at: new Date(started + Number(row.latency_ms)).toISOString(),
    duration_ms: Number(row.latency_ms),
    status: { code: row.status === 'error' ? 'error' : 'unset', message: error?.message ?? null },
    attributes: {
      [ATTR_GEN_AI_OPERATION_NAME]: operationOf(route),
      [ATTR_GEN_AI_REQUEST_MODEL]: row.model,
      'evalgate.task_log_id': row.id,
    },
    events: json<TraceSpan['events']>(events, []),
    resource: { 'service.name': 'evalgate' },
    scope: null,
    model_call: {
      task_log_id: row.id,
      provider: null,
      model: row.model,
      request_model: row.model,
      response_model: null,
      usage: { input_tokens: input, output_tokens: output, total_tokens: input + output },
      cost: Number(row.cost),
      content_captured: true,
    },
  };
}

/** Depth-first from the roots, children by start time (then end time); a span whose parent never arrived is a root. */
function placed(spans: Unplaced[]): TraceSpan[] {
  const start = Math.min(...spans.map((s) => Date.parse(s.started_at)));
  const ids = new Set(spans.map((s) => s.span_id));
  const children = new Map<string | null, Unplaced[]>();
  for (const s of spans) {
    const parent = s.parent_span_id !== null && ids.has(s.parent_span_id) ? s.parent_span_id : null;
    const list = children.get(parent) ?? [];
    list.push(s);
    children.set(parent, list);
  }
  // Started in the same millisecond (the precision stored): the one that ended first first.
  for (const list of children.values())
    list.sort((a, b) => a.started_at.localeCompare(b.started_at) || a.ended_at.localeCompare(b.ended_at));
  const out: TraceSpan[] = [];
  const placedIds = new Set<string>();
  const place = (s: Unplaced, depth: number) =>
    out.push({ ...s, depth, offset_ms: Math.max(0, Date.parse(s.started_at) - start) });
  const visit = (parent: string | null, depth: number) => {
    for (const s of children.get(parent) ?? []) {
      // A cycle (a span its own ancestor) cannot loop: each span is placed once.
      if (placedIds.has(s.span_id)) continue;
      placedIds.add(s.span_id);
      place(s, depth);
      visit(s.span_id, depth + 1);
    }
  };
  visit(null, 0);
  // Spans in a parent cycle are reached by no root: listed as roots.
  for (const s of spans) {
    if (placedIds.has(s.span_id)) continue;
    placedIds.add(s.span_id);
    place(s, 0);
    visit(s.span_id, 1);
  }
  return out;
}

function totalsOf(spans: TraceSpan[]): TraceTotals {
  const calls = spans.flatMap((s) => (s.model_call ? [s.model_call] : []));
  const input = calls.reduce((n, c) => n + c.usage.input_tokens, 0);
  const output = calls.reduce((n, c) => n + c.usage.output_tokens, 0);
  return {
    span_count: spans.length,
    error_count: spans.filter((s) => s.status.code === 'error').length,
    model_call_count: calls.length,
    usage: { input_tokens: input, output_tokens: output, total_tokens: input + output },
    cost: usd(calls.reduce((n, c) => n + c.cost, 0)),
  };
}

/** One trace of the project with its spans (ingested ones and the gateway's calls); 404 when it has none. */
export async function getTrace(db: Kysely<Database>, projectId: string, traceId: string): Promise<Trace> {
  const id = traceId.toLowerCase();
  const [spanRows, logRows] = await Promise.all([
    db
      .selectFrom('spans')
      .selectAll()
      .where('project_id', '=', projectId)
      .where('trace_id', '=', id)
      .execute(),
    db
      .selectFrom('task_logs')
      .selectAll()
      .where('project_id', '=', projectId)
      .where('trace_id', '=', id)
      .execute(),
  ]);
  // A gateway call is shown from its task log (its span row only says what the trace list needs); a
  // call whose log is gone (log retention) keeps its span row.
  const logged = new Set(logRows.map((r) => r.span_id ?? ''));
  // What the log does not say is taken from the span row: its events (the guards' verdicts).
  const rowEvents = new Map<string, string>();
  const spans: Unplaced[] = spanRows
    .filter((r) => {
      if (!(r.scope?.includes(GATEWAY_SCOPE) && logged.has(r.span_id))) return true;
      rowEvents.set(r.span_id, r.events);
      return false;
    })
    .map(spanOf);
  const known = new Set(spans.map((s) => s.span_id));
  // A task log made from an ingested span is that span already; the others are the gateway's calls.
  for (const row of logRows) {
    const spanId = row.span_id ?? '';
    if (!known.has(spanId)) spans.push(gatewaySpanOf(row, rowEvents.get(spanId) ?? null));
  }
  if (spans.length === 0) throw ApiError.notFound('Trace', traceId);
  const sessionId = placeSessions(spans, logRows);
  const tree = placed(spans);
  const roots = tree.filter((s) => s.depth === 0);
  const root = roots.find((s) => s.parent_span_id === null) ?? roots[0];
  const models = [...new Set(tree.flatMap((s) => (s.model_call?.model ? [s.model_call.model] : [])))].sort();
  const started = tree.map((s) => s.started_at).sort()[0] ?? '';
  const ended =
    tree
      .map((s) => s.ended_at)
      .sort()
      .at(-1) ?? '';
  const service = (root?.resource as Record<string, unknown> | undefined)?.['service.name'];
  return {
    object: 'trace',
    id,
    project_id: projectId,
    container_id: tree.find((s) => s.container_id !== null)?.container_id ?? null,
    name: root?.name ?? null,
    service_name: typeof service === 'string' ? service : null,
    session_id: sessionId,
    started_at: started,
    ended_at: ended,
    duration_ms: Math.max(0, Date.parse(ended) - Date.parse(started)),
    models,
    totals: totalsOf(tree),
    spans: tree,
  };
}
