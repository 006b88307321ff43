import type { Kysely } from 'kysely';
import { setLogContent } from '../capture/task-log-store.js';
import type { NewSpanRow, TraceStore } from '../capture/trace-port.js';
import type { LogWriter } from '../capture/types.js';
import type { Database } from '../db/schema.js';
import { recordedOutput } from '../llm/recorded-output.js';
import { contentWithLogEvents, type LogEvent, logEventsOf } from './logs-events.js';
import type { Attributes, CallContent, ModelCallFacts } from './mapping/index.js';
import type { Usage } from './mapping/types.js';
import type { OtlpLogsRequest } from './otlp/logs-proto.js';
import type { IngestedSpan } from './span.js';
import { completionOf } from './task-log.js';
import type { SpanModelCall } from './types.js';

/**
 * The join of a model call's span and its GenAI events sent as log records, whichever arrives first:
 * events are stored per span (a retry's copies once); a span stored later reads them before its task log
 * is written (`enrich`), and events arriving after the span rewrite the content of its task log in place
 * (`ingest`). Both sides store first and look for the other second, so neither order loses the content.
 */

export interface LogIngestResult {
  accepted: number;
  rejected: number;
  errors: string[];
}

/** A model-call span just stored, on its way to becoming a task log. */
export interface FreshCall {
  projectId: string;
  span: IngestedSpan;
  call: ModelCallFacts;
  row: NewSpanRow;
}

export interface LogIngest {
  /** Stores the request's GenAI events and completes the task logs of the spans already stored. */
  ingest(projectId: string, request: OtlpLogsRequest): Promise<LogIngestResult>;
  /** Gives the calls without content the content of their stored events (the span came second). */
  enrich(calls: FreshCall[]): Promise<void>;
  /** Resolves when the task-log rewrites started so far are done. */
  flush(): Promise<void>;
}

const INSERT_ROWS = 100;
const LOOKUP = 100;
const REWRITE_TRIES = 3;
const REWRITE_WAIT_MS = 250;

interface StoredEvent {
  trace_id: string;
  span_id: string;
  name: string;
  attributes: string;
}

const pairKey = (traceId: string, spanId: string) => `${traceId}:${spanId}`;

function parseAttributes(text: string): Attributes {
  try {
    const v = JSON.parse(text) as unknown;
    return typeof v === 'object' && v !== null && !Array.isArray(v) ? (v as Attributes) : {};
  } catch {
    return {};
  }
}

/** The stored events of these spans, each span's in arrival order. */
async function eventsOf(
  db: Kysely<Database>,
  projectId: string,
  pairs: { traceId: string; spanId: string }[],
): Promise<Map<string, { name: string; attributes: Attributes }[]>> {
  const out = new Map<string, { name: string; attributes: Attributes }[]>();
  for (let i = 0; i < pairs.length; i += LOOKUP) {
    const slice = pairs.slice(i, i + LOOKUP);
    const rows: StoredEvent[] = await db
      .selectFrom('span_log_events')
      .select(['trace_id', 'span_id', 'name', 'attributes'])
      .where('project_id', '=', projectId)
      .where('trace_id', 'in', [...new Set(slice.map((p) => p.traceId))])
      .where('span_id', 'in', [...new Set(slice.map((p) => p.spanId))])
      .orderBy('time')
      .orderBy('received_at')
      .orderBy('ordinal')
      .execute();
    for (const r of rows) {
      const k = pairKey(r.trace_id, r.span_id);
      const list = out.get(k) ?? [];
      list.push({ name: r.name, attributes: parseAttributes(r.attributes) });
      out.set(k, list);
    }
  }
  return out;
}

async function storeEvents(db: Kysely<Database>, projectId: string, events: LogEvent[]): Promise<void> {
  const now = new Date().toISOString();
  for (let i = 0; i < events.length; i += INSERT_ROWS) {
    await db
      .insertInto('span_log_events')
      .values(
        events.slice(i, i + INSERT_ROWS).map((e) => ({
          project_id: projectId,
          trace_id: e.traceId,
          span_id: e.spanId,
          event_key: e.key,
          name: e.name,
          time: e.time,
          ordinal: e.ordinal,
          attributes: JSON.stringify(e.attributes).replaceAll('\\u0000', '\\ufffd'),
          received_at: now,
        })),
      )
      .onConflict((oc) => oc.doNothing())
      .execute();
  }
}

/** A task log's usage column as the mapping's counts, null where it has none. */
function usageOf(text: string | null): Usage {
  const u = text === null ? {} : parseAttributes(text);
  const count = (v: unknown) => (typeof v === 'number' && Number.isFinite(v) ? v : null);
  return { input: count(u.prompt_tokens), output: count(u.completion_tokens) };
}

/** The task log's recorded content replaced by `content` (what the span alone could not say). */
async function rewriteTaskLog(
  db: Kysely<Database>,
  projectId: string,
  logId: string,
  span: { spanId: string; startedAt: string },
  view: SpanModelCall,
  content: CallContent,
): Promise<boolean> {
  const row = await db
    .selectFrom('task_logs')
    .select(['metadata', 'request', 'usage'])
    .where('project_id', '=', projectId)
    .where('id', '=', logId)
    .executeTakeFirst();
  if (!row) return false;
  const call: ModelCallFacts = {
    convention: 'genai',
    provider: view.provider,
    requestModel: view.request_model,
    responseModel: view.response_model,
    // The counts the log has: the span view's integers say 0 for a count the emitter did not record.
    usage: usageOf(row.usage),
    content,
  };
  const completion = completionOf(span, call);
  const metadata = { ...(parseAttributes(row.metadata) as Record<string, unknown>), content_captured: true };
  await setLogContent(db, projectId, logId, {
    input: JSON.stringify(content.input),
    output: content.output === null ? null : recordedOutput(completion),
    request: JSON.stringify({ model: view.request_model, messages: content.input }),
    response: JSON.stringify(completion),
    metadata: JSON.stringify(metadata),
  });
  return true;
}

async function markCaptured(
  spans: TraceStore,
  projectId: string,
  traceId: string,
  spanId: string,
  view: SpanModelCall,
) {
  await spans.setModelCall(projectId, traceId, spanId, JSON.stringify({ ...view, content_captured: true }));
}

interface StoredSpan {
  trace_id: string;
  span_id: string;
  name: string;
  started_at: string;
  attributes: string;
  events: string;
  model_call: string | null;
}

export function createLogIngest(deps: {
  db: Kysely<Database>;
  /** Where a span whose content came in log events is marked so. */
  spans: TraceStore;
  logWriter: LogWriter | null;
  warn?: (message: string) => void;
}): LogIngest {
  const { db } = deps;
  let tail: Promise<void> = Promise.resolve();

  /** Rewrites the task logs of stored model-call spans that these events complete. */
  async function complete(projectId: string, pairs: { traceId: string; spanId: string }[]): Promise<void> {
    const spans: StoredSpan[] = [];
    for (let i = 0; i < pairs.length; i += LOOKUP) {
      const slice = pairs.slice(i, i + LOOKUP);
      const found = await db
        .selectFrom('spans')
        .select(['trace_id', 'span_id', 'name', 'started_at', 'attributes', 'events', 'model_call'])
        .where('project_id', '=', projectId)
        .where('trace_id', 'in', [...new Set(slice.map((p) => p.traceId))])
        .where('span_id', 'in', [...new Set(slice.map((p) => p.spanId))])
        .where('model_call', 'is not', null)
        .execute();
      spans.push(...found);
    }
    if (spans.length === 0) return;
    const events = await eventsOf(
      db,
      projectId,
      spans.map((s) => ({ traceId: s.trace_id, spanId: s.span_id })),
    );
    let flushed = false;
    for (const s of spans) {
      const view = JSON.parse(s.model_call ?? 'null') as SpanModelCall | null;
      const list = events.get(pairKey(s.trace_id, s.span_id));
      if (!view || !list) continue;
      const stored = {
        spanId: s.span_id,
        name: s.name,
        attributes: parseAttributes(s.attributes),
        events: spanEventsOf(s.events),
      };
      const content = contentWithLogEvents(stored, list);
      if (!content) continue;
      if (view.task_log_id) {
        // The span's task log may still be in the writer's hands: written first, then rewritten.
        if (!flushed && deps.logWriter && (deps.logWriter.holds?.(view.task_log_id) ?? true)) {
          await deps.logWriter.flush();
          flushed = true;
        }
        const at = { spanId: s.span_id, startedAt: s.started_at };
        // A span stored a moment ago may not have handed its task log to the writer yet: asked again.
        for (let attempt = 0; attempt < REWRITE_TRIES; attempt++) {
          if (await rewriteTaskLog(db, projectId, view.task_log_id, at, view, content)) break;
          await new Promise((resolve) => setTimeout(resolve, REWRITE_WAIT_MS));
          await deps.logWriter?.flush();
        }
      }
      if (!view.content_captured) await markCaptured(deps.spans, projectId, s.trace_id, s.span_id, view);
    }
  }

  return {
    async ingest(projectId, request) {
      const found = logEventsOf(request);
      if (found.events.length > 0) {
        await storeEvents(db, projectId, found.events);
        const seen = new Map<string, { traceId: string; spanId: string }>();
        for (const e of found.events)
          seen.set(pairKey(e.traceId, e.spanId), { traceId: e.traceId, spanId: e.spanId });
        // Off the request path: the events are stored; joining them to spans already stored follows.
        tail = tail
          .then(() => complete(projectId, [...seen.values()]))
          .catch((err: Error) =>
            deps.warn?.(`OTLP logs: a task log could not take its messages: ${err.message}`),
          );
      }
      return {
        accepted: found.events.length,
        rejected: found.rejected,
        errors: found.errors,
      };
    },

    async enrich(calls) {
      const bare = calls.filter((c) => c.call.content.input === null && c.call.content.output === null);
      if (bare.length === 0) return;
      const byProject = new Map<string, FreshCall[]>();
      for (const c of bare) byProject.set(c.projectId, [...(byProject.get(c.projectId) ?? []), c]);
      for (const [projectId, list] of byProject) {
        const events = await eventsOf(
          db,
          projectId,
          list.map((c) => ({ traceId: c.span.traceId, spanId: c.span.spanId })),
        );
        for (const c of list) {
          const stored = events.get(pairKey(c.span.traceId, c.span.spanId));
          if (!stored) continue;
          const content = contentWithLogEvents(c.span, stored);
          if (!content) continue;
          c.call.content = content;
          const view = JSON.parse(String(c.row.model_call ?? 'null')) as SpanModelCall | null;
          if (view) await markCaptured(deps.spans, projectId, c.span.traceId, c.span.spanId, view);
        }
      }
    },

    flush: () => tail,
  };
}

function spanEventsOf(text: string): { name: string; attributes: Attributes }[] {
  try {
    const v = JSON.parse(text) as unknown;
    if (!Array.isArray(v)) return [];
    return v.flatMap((e) => {
      const o = e as { name?: unknown; attributes?: unknown };
      return typeof o.name === 'string' && typeof o.attributes === 'object' && o.attributes !== null
        ? [{ name: o.name, attributes: o.attributes as Attributes }]
        : [];
    });
  } catch {
    return [];
  }
}
