import { type Expression, type Kysely, PostgresAdapter, type SqlBool, sql } from 'kysely';
import { setLogMetadata } from '../capture/task-log-store.js';
import type { LogRow } from '../catalog/logs/repository.js';
import type { Database } from '../db/schema.js';
import { completionIdOf, logIdOfCompletion } from '../llm/dialects/chat/answer.js';
import { CHAT } from '../llm/dialects/chat/index.js';
import { chatAnswer } from '../shared/chat-answer.js';
import { isObject, type JsonObject, parseJson } from '../shared/json.js';

/*
 * Stored chat completions are task logs of the chat route whose metadata says `store: true` (the gateway
 * sets it from the request's `store`; a deleted one says `store: false, deleted: true`). Their id is
 * `chatcmpl-X` for the log `log_X`. Migration 012 indexes them per project by creation time, with the
 * very predicate `storedChat` writes, so lists and selections read the index instead of every log.
 */

/** Metadata keys the gateway writes on a chat task log; the rest is the client's. */
export const GATEWAY_METADATA_KEYS: readonly string[] = [
  'route',
  'stream',
  'store',
  'deleted',
  'served_by',
  'attempts',
];

export interface StoredCompletionOutput {
  role: 'assistant';
  content: string | null;
  tool_calls: JsonObject[] | null;
  finish_reason: string | null;
}

export interface StoredCompletionUsage {
  prompt_tokens: number;
  completion_tokens: number;
  total_tokens: number;
}

/** One stored chat completion, as the evals and the stored-completions routes read it. */
export interface StoredCompletion {
  /** `chatcmpl-…`, the id the client got. */
  id: string;
  logId: string;
  /** Unix seconds. */
  createdAt: number;
  model: string;
  /** The request's messages, as sent. */
  input: JsonObject[];
  /** The first choice's message (content and tool calls) and finish reason. */
  output: StoredCompletionOutput;
  usage: StoredCompletionUsage | null;
  /** The client's metadata (the request's `metadata` and the X-Evalgate-Metadata header), as updated. */
  metadata: Record<string, string>;
  /** The request as the client sent it (sampling parameters, tools, response format…). */
  request: JsonObject;
  /** The recorded answer (a chat completion; a streamed one assembled from its chunks). */
  completion: JsonObject;
}

export interface StoredCompletionFilter {
  /** Every key/value must be on the completion's metadata (string values). */
  metadata?: Record<string, string>;
  model?: string;
  /** Unix seconds: created at or after. */
  createdAfter?: number;
  /** Unix seconds: created strictly before. */
  createdBefore?: number;
}

export const isPostgres = (db: Kysely<Database>) => db.getExecutor().adapter instanceof PostgresAdapter;

/** The chat route, inlined as a literal (a bound parameter would not match the partial index). */
const ROUTE = sql.lit(CHAT.name);

/** The stored-chat predicate, spelled exactly as migration 012's partial index is. */
function storedChat(db: Kysely<Database>): Expression<SqlBool> {
  return isPostgres(db)
    ? sql<SqlBool>`((metadata::jsonb ->> 'route') = ${ROUTE} and (metadata::jsonb -> 'store') = 'true'::jsonb)`
    : sql<SqlBool>`(json_extract(metadata, '$.route') = ${ROUTE} and json_type(metadata, '$.store') = 'true')`;
}

export function metadataPair(db: Kysely<Database>, key: string, value: string): Expression<SqlBool> {
  return isPostgres(db)
    ? sql<SqlBool>`(metadata::jsonb @> ${JSON.stringify({ [key]: value })}::jsonb)`
    : sql<SqlBool>`exists (select 1 from json_each(task_logs.metadata) as m where m.key = ${key} and m.type = 'text' and m.value = ${value})`;
}

export const isoOf = (unixSeconds: number) => new Date(unixSeconds * 1000).toISOString();

function filtered(db: Kysely<Database>, projectId: string, f: StoredCompletionFilter) {
  // A failed call answered no completion: nothing of it is stored.
  let q = db
    .selectFrom('task_logs')
    .where('project_id', '=', projectId)
    .where(storedChat(db))
    .where('status', '=', 'success');
  if (f.model !== undefined) q = q.where('model', '=', f.model);
  if (f.createdAfter !== undefined) q = q.where('created_at', '>=', isoOf(f.createdAfter));
  if (f.createdBefore !== undefined) q = q.where('created_at', '<', isoOf(f.createdBefore));
  for (const [key, value] of Object.entries(f.metadata ?? {})) q = q.where(metadataPair(db, key, value));
  return q;
}

/** The client's part of a task log's metadata: the gateway's own keys left out, string values only. */
export function clientMetadataOf(metadata: JsonObject): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(metadata)) {
    if (!GATEWAY_METADATA_KEYS.includes(k) && typeof v === 'string') out[k] = v;
  }
  return out;
}

function outputOf(completion: JsonObject): StoredCompletionOutput {
  const answer = chatAnswer(completion);
  const message = answer.message ?? {};
  // The tool calls as stored (every field the upstream sent), not the answer's normalised ones.
  const calls = Array.isArray(message.tool_calls) ? message.tool_calls.filter(isObject) : [];
  return {
    role: 'assistant',
    content: typeof message.content === 'string' ? message.content : null,
    tool_calls: calls.length > 0 ? calls : null,
    finish_reason: answer.finishReason,
  };
}

function usageOf(text: string | null): StoredCompletionUsage | null {
  const usage = parseJson<unknown>(text, null);
  if (!isObject(usage)) return null;
  const n = (v: unknown) => (typeof v === 'number' && Number.isFinite(v) ? v : 0);
  const prompt = n(usage.prompt_tokens);
  const completion = n(usage.completion_tokens);
  return {
    prompt_tokens: prompt,
    completion_tokens: completion,
    total_tokens: usage.total_tokens === undefined ? prompt + completion : n(usage.total_tokens),
  };
}

export function toStoredCompletion(row: LogRow): StoredCompletion {
  const input = parseJson<unknown>(row.input, []);
  const completion = parseJson<unknown>(row.response, {});
  const answer = isObject(completion) ? completion : {};
  return {
    id: completionIdOf(row.id),
    logId: row.id,
    createdAt: Math.floor(Date.parse(row.created_at) / 1000),
    model: row.model,
    input: Array.isArray(input) ? input.filter(isObject) : [],
    output: outputOf(answer),
    usage: usageOf(row.usage),
    metadata: clientMetadataOf(parseJson<JsonObject>(row.metadata, {})),
    request: parseJson<JsonObject>(row.request, {}),
    completion: answer,
  };
}

/**
 * The project's stored chat completions that pass the filter, oldest first, at most `limit` (all when
 * left out): what an eval's `stored_completions` source reads.
 */
export async function selectStoredCompletions(
  db: Kysely<Database>,
  projectId: string,
  filter: StoredCompletionFilter & { limit?: number },
): Promise<StoredCompletion[]> {
  let q = filtered(db, projectId, filter).selectAll().orderBy('created_at').orderBy('id');
  if (filter.limit !== undefined) q = q.limit(filter.limit);
  return (await q.execute()).map(toStoredCompletion);
}

export interface StoredCompletionPage {
  data: StoredCompletion[];
  hasMore: boolean;
}

/**
 * One page of the project's stored completions in creation order, after the completion `after` (a
 * cursor that names no stored completion of the project gives an empty page).
 */
export async function pageStoredCompletions(
  db: Kysely<Database>,
  projectId: string,
  filter: StoredCompletionFilter,
  page: { after?: string; limit: number; order: 'asc' | 'desc' },
): Promise<StoredCompletionPage> {
  let q = filtered(db, projectId, filter).selectAll();
  if (page.after !== undefined) {
    const cursor = await findStoredRow(db, projectId, page.after);
    if (!cursor) return { data: [], hasMore: false };
    const op = page.order === 'asc' ? '>' : '<';
    q = q.where((eb) =>
      eb.or([
        eb('created_at', op, cursor.created_at),
        eb.and([eb('created_at', '=', cursor.created_at), eb('id', op, cursor.id)]),
      ]),
    );
  }
  const rows = await q
    .orderBy('created_at', page.order)
    .orderBy('id', page.order)
    .limit(page.limit + 1)
    .execute();
  return { data: rows.slice(0, page.limit).map(toStoredCompletion), hasMore: rows.length > page.limit };
}

/** The task log of a stored completion of the project, or undefined (deleted, not stored, unknown id). */
export async function findStoredRow(
  db: Kysely<Database>,
  projectId: string,
  completionId: string,
): Promise<LogRow | undefined> {
  const logId = logIdOfCompletion(completionId);
  if (logId === null) return undefined;
  return db
    .selectFrom('task_logs')
    .selectAll()
    .where('id', '=', logId)
    .where('project_id', '=', projectId)
    .where(storedChat(db))
    .where('status', '=', 'success')
    .executeTakeFirst();
}

export async function findStoredCompletion(
  db: Kysely<Database>,
  projectId: string,
  completionId: string,
): Promise<StoredCompletion | undefined> {
  const row = await findStoredRow(db, projectId, completionId);
  return row ? toStoredCompletion(row) : undefined;
}

/** Replaces a stored completion's metadata (JSON text of the whole task-log metadata). */
export async function writeStoredMetadata(
  db: Kysely<Database>,
  projectId: string,
  logId: string,
  metadata: JsonObject,
): Promise<boolean> {
  return setLogMetadata(db, projectId, logId, JSON.stringify(metadata), storedChat(db));
}
