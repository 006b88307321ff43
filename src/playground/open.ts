import type { Kysely } from 'kysely';
import { findLog } from '../capture/task-log-store.js';
import { toTaskLog } from '../catalog/logs/service.js';
import type { Database } from '../db/schema.js';
import { requirePrompt, resolvePrompt, toVersion } from '../prompts/service.js';
import { requireSession, sessionLogs } from '../sessions/service.js';
import { ApiError } from '../shared/errors.js';
import type { JsonObject } from '../shared/json.js';
import { getTrace } from '../traces/reads.js';
import type { EditableRequest, OpenQuery } from './schemas.js';

/*
 * What the playground opens: a prompt version (its template, variables to fill), or a recorded call — a
 * task log, a trace's model-call span, a session's turn — as the request it sent (its messages already
 * rendered, its tools, response format and parameters).
 */

type Message = EditableRequest['messages'][number];
const ROLES = new Set(['system', 'developer', 'user', 'assistant']);
/** Request fields that are not the call's parameters. */
const NOT_PARAMETERS = new Set([
  'model',
  'messages',
  'stream',
  'stream_options',
  'tools',
  'tool_choice',
  'response_format',
  'metadata',
  'store',
  'prompt',
  'user',
]);

/** A message's text: a string as it is, text parts joined, anything else as JSON. */
function textOf(content: unknown): string {
  if (typeof content === 'string') return content;
  if (Array.isArray(content)) {
    return content
      .map((p) => (typeof p === 'object' && p !== null && typeof p.text === 'string' ? p.text : ''))
      .join('');
  }
  return content === null || content === undefined ? '' : JSON.stringify(content);
}

/** The recorded messages the playground can edit (prompt roles; tool results and calls are left out). */
function messagesOf(value: unknown): Message[] {
  if (!Array.isArray(value)) return [];
  const out: Message[] = [];
  for (const m of value as JsonObject[]) {
    const role = typeof m?.role === 'string' ? m.role : '';
    if (!ROLES.has(role)) continue;
    const text = textOf(m.content);
    if (text === '' && role === 'assistant') continue;
    out.push({ role: role as Message['role'], content: text });
  }
  return out;
}

const isObject = (v: unknown): v is JsonObject => typeof v === 'object' && v !== null && !Array.isArray(v);

/** A task log of the project as an editable request (404 for another project's or an unknown log). */
async function fromTaskLog(
  db: Kysely<Database>,
  projectId: string,
  id: string,
  source: EditableRequest['source'],
): Promise<EditableRequest> {
  const row = await findLog(db, projectId, id);
  if (!row) throw ApiError.notFound('Task log', id);
  const log = toTaskLog(row);
  const request = isObject(log.request) ? log.request : {};
  const messages = messagesOf(Array.isArray(request.messages) ? request.messages : log.input);
  if (messages.length === 0) {
    throw ApiError.invalid(['query', source.kind], `The call ${log.id} recorded no chat messages to edit`);
  }
  const parameters: JsonObject = {};
  for (const [k, v] of Object.entries(request)) if (!NOT_PARAMETERS.has(k) && v !== null) parameters[k] = v;
  let promptName: string | null = null;
  const promptId = log.prompt_id ?? null;
  const promptVersion = log.prompt_version ?? null;
  if (promptId !== null) {
    const found = await requirePrompt(db, projectId, promptId).catch(() => null);
    promptName = found?.name ?? null;
  }
  return {
    object: 'playground.request',
    source: { ...source, task_log_id: log.id },
    messages,
    variables: {},
    variable_types: {},
    tools: Array.isArray(request.tools) ? (request.tools as JsonObject[]) : null,
    response_format: isObject(request.response_format) ? request.response_format : null,
    parameters,
    model: log.model,
    output: log.output,
    prompt: promptId !== null && promptVersion !== null ? { id: promptId, version: promptVersion } : null,
    prompt_name: promptName,
  };
}

async function fromPrompt(db: Kysely<Database>, projectId: string, q: OpenQuery): Promise<EditableRequest> {
  const which = {
    ...(q.version === undefined ? {} : { version: q.version }),
    ...(q.label === undefined ? {} : { label: q.label }),
  };
  const resolved = await resolvePrompt(db, projectId, q.prompt ?? '', which);
  const v = toVersion(resolved.prompt, resolved.version, resolved.labels);
  const variables: JsonObject = {};
  for (const m of v.messages)
    for (const [, name] of m.content.matchAll(/\{\{\s*([A-Za-z_]\w*)\s*\}\}/g)) {
      if (name) variables[name] = '';
    }
  return {
    object: 'playground.request',
    source: { kind: 'prompt_version', id: `${v.prompt_id}@${v.version}`, task_log_id: null },
    messages: v.messages,
    variables,
    variable_types: v.variables,
    tools: v.tools as JsonObject[] | null,
    response_format: v.response_format,
    parameters: v.parameters,
    model: v.model,
    output: null,
    prompt: { id: v.prompt_id, version: v.version },
    prompt_name: v.name,
  };
}

async function fromSpan(
  db: Kysely<Database>,
  projectId: string,
  spanId: string,
  traceId: string | undefined,
) {
  if (traceId === undefined) throw ApiError.invalid(['query', 'trace'], 'Opening a span needs its trace');
  const trace = await getTrace(db, projectId, traceId);
  const span = trace.spans.find((s) => s.span_id === spanId.toLowerCase());
  if (!span) throw ApiError.notFound('Span', spanId);
  const logId = span.model_call?.task_log_id ?? null;
  if (logId === null) {
    throw ApiError.invalid(['query', 'span'], `Span ${span.span_id} is not a recorded model call`);
  }
  return fromTaskLog(db, projectId, logId, { kind: 'span', id: span.span_id, task_log_id: logId });
}

async function fromSessionTurn(db: Kysely<Database>, projectId: string, id: string, turn: number) {
  const session = await requireSession(db, projectId, id);
  const [log] = await sessionLogs(db, session.id, 1, turn);
  if (!log) throw ApiError.notFound('Session turn', `${session.id}#${turn}`);
  return fromTaskLog(db, projectId, log.id, {
    kind: 'session_turn',
    id: `${session.id}#${turn}`,
    task_log_id: log.id,
  });
}

/** The editable request of what the query names (exactly one of: prompt, task_log, span, session). */
export function openRequest(db: Kysely<Database>, projectId: string, q: OpenQuery): Promise<EditableRequest> {
  const named = (['prompt', 'task_log', 'span', 'session'] as const).filter((k) => q[k] !== undefined);
  if (named.length !== 1) {
    throw ApiError.invalid(['query'], 'Name exactly one of prompt, task_log, span or session to open');
  }
  if (q.prompt !== undefined) return fromPrompt(db, projectId, q);
  if (q.task_log !== undefined) {
    return fromTaskLog(db, projectId, q.task_log, { kind: 'task_log', id: q.task_log, task_log_id: null });
  }
  if (q.span !== undefined) return fromSpan(db, projectId, q.span, q.trace);
  return fromSessionTurn(db, projectId, q.session ?? '', q.turn ?? 0);
}
