import { assembleCompletion } from '../llm/assemble.js';
import { readUsage } from '../llm/providers/openai-compatible.js';
import { recordedOutput } from '../llm/recorded-output.js';
import { ssePayloads } from '../llm/sse.js';
import type { NewLogRow } from './task-log-store.js';
import type { TaskLogRecord } from './types.js';

// PostgreSQL text cannot hold U+0000, and a NaN would break the NOT NULL numeric columns on SQLite.
const clean = (s: string) => (s.includes('\u0000') ? s.replaceAll('\u0000', '\uFFFD') : s);
const finite = (n: number) => (Number.isFinite(n) ? n : 0);

/** The request's own text parsed (null when it is not JSON). */
function parseRequest(requestText: string): { messages?: unknown } | null {
  try {
    return JSON.parse(requestText) as { messages?: unknown } | null;
  } catch {
    return null;
  }
}

/** The recorded response and output: a streamed answer's chunks assembled into one completion. */
function answerOf(r: TaskLogRecord): { response: string; output: string | null } {
  if (r.responseSse !== undefined) {
    const completion = assembleCompletion(ssePayloads(r.responseSse), r.model);
    // The usage chunk is not among them when the client did not ask for it.
    completion.usage ??= readUsage(r.usage);
    const text = recordedOutput(completion);
    // A stream that failed before any text has no output.
    return {
      response: JSON.stringify(completion),
      output: r.status === 'error' && text === '' ? null : text,
    };
  }
  if (r.responseText !== undefined) return { response: r.responseText, output: r.output };
  return { response: JSON.stringify(r.response ?? null), output: r.output };
}

function inputOf(r: TaskLogRecord, request: { messages?: unknown } | null): unknown {
  if (r.input !== undefined || r.requestText === undefined) return r.input ?? null;
  return request?.messages ?? null;
}

/** A record as a row, seq 0 until its batch is written (set in place); throws if it cannot be serialised. */
export function draftOf(r: TaskLogRecord): NewLogRow {
  const { response, output } = answerOf(r);
  const request = r.requestText !== undefined ? parseRequest(r.requestText) : (r.request ?? null);
  const input = inputOf(r, r.requestText !== undefined ? (request as { messages?: unknown } | null) : null);
  const row: NewLogRow = {
    id: r.id,
    project_id: r.projectId,
    container_id: r.containerId,
    seq: 0,
    model: clean(r.model),
    input: clean(JSON.stringify(input)),
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
    trace_id: r.traceId ?? null,
    span_id: r.spanId ?? null,
    parent_span_id: r.parentSpanId ?? null,
    session_id: r.sessionId ?? null,
    prompt_id: r.promptId ?? null,
    prompt_version: r.promptVersion ?? null,
  };
  return row;
}

/** `toISOString()`'s own form (the gateway's records come in it), kept as it is. */
const CANONICAL_ISO = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;

function isoOr(text: string): string {
  if (CANONICAL_ISO.test(text)) return text;
  const t = Date.parse(text);
  return Number.isNaN(t) ? new Date().toISOString() : new Date(t).toISOString();
}
