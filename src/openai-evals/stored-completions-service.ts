import type { Kysely } from 'kysely';
import type { Database } from '../db/schema.js';
import { logIdOfCompletion } from '../llm/dialects/chat/answer.js';
import { ApiError, type ValidationIssue } from '../shared/errors.js';
import { isObject, type JsonObject, parseJson } from '../shared/json.js';
import { badRequest } from './errors.js';
import {
  findStoredRow,
  GATEWAY_METADATA_KEYS,
  pageStoredCompletions,
  type StoredCompletion,
  type StoredCompletionFilter,
  toStoredCompletion,
  writeStoredMetadata,
} from './stored-completions-repository.js';

/** What the stored chat completions routes need: the database, and the log writer to read their own writes. */
export interface StoredCompletionPorts {
  db: Kysely<Database>;
  /** Resolves once the task logs accepted so far are written (a completion just answered may still be queued). */
  flush(): Promise<void>;
  /** Whether the log writer may still hold the task log of this id, answered at once (true when it cannot tell). */
  holds(logId: string): boolean;
}

export const METADATA_LIMITS = { pairs: 16, keyChars: 64, valueChars: 512 } as const;

/** OpenAI's metadata rules (16 pairs, keys ≤ 64 characters, string values ≤ 512), every breach named. */
export function metadataIssues(value: unknown, loc: (string | number)[]): ValidationIssue[] {
  if (value === null) return [];
  if (!isObject(value)) return [{ loc, msg: 'must be an object of strings or null', type: 'object_type' }];
  const issues: ValidationIssue[] = [];
  const keys = Object.keys(value);
  if (keys.length > METADATA_LIMITS.pairs) {
    issues.push({
      loc,
      msg: `has ${keys.length} keys, at most ${METADATA_LIMITS.pairs} allowed`,
      type: 'too_long',
    });
  }
  for (const key of keys) {
    const v = value[key];
    if (key.length > METADATA_LIMITS.keyChars) {
      issues.push({
        loc: [...loc, key],
        msg: `key longer than ${METADATA_LIMITS.keyChars} characters`,
        type: 'too_long',
      });
    }
    if (typeof v !== 'string')
      issues.push({ loc: [...loc, key], msg: 'must be a string', type: 'string_type' });
    else if (v.length > METADATA_LIMITS.valueChars) {
      issues.push({
        loc: [...loc, key],
        msg: `longer than ${METADATA_LIMITS.valueChars} characters`,
        type: 'too_long',
      });
    }
  }
  return issues;
}

const notFound = (id: string) => ApiError.notFound('Chat completion', id);

/**
 * The completion's task log; when it is not there yet and the writer may still hold it (a completion
 * just answered), read again after the writer flushed. Any other miss answers at once: an unknown id
 * costs no flush.
 */
async function requireRow(ports: StoredCompletionPorts, projectId: string, id: string) {
  let row = await findStoredRow(ports.db, projectId, id);
  const logId = logIdOfCompletion(id);
  if (!row && logId !== null && ports.holds(logId)) {
    await ports.flush();
    row = await findStoredRow(ports.db, projectId, id);
  }
  if (!row) throw notFound(id);
  return row;
}

/** A stored completion as the SDK's `ChatCompletion`, with its metadata. */
export function chatCompletionObject(c: StoredCompletion): JsonObject & { id: string } {
  const answer = c.completion;
  const choices = (Array.isArray(answer.choices) ? answer.choices : []).filter(isObject).map((choice, i) => {
    const message = isObject(choice.message) ? choice.message : {};
    return {
      ...choice,
      index: typeof choice.index === 'number' ? choice.index : i,
      message: {
        ...message,
        role: 'assistant',
        content: typeof message.content === 'string' ? message.content : null,
        refusal: typeof message.refusal === 'string' ? message.refusal : null,
      },
      finish_reason: typeof choice.finish_reason === 'string' ? choice.finish_reason : null,
      logprobs: isObject(choice.logprobs) ? choice.logprobs : null,
    };
  });
  const out: JsonObject & { id: string } = {
    id: c.id,
    object: 'chat.completion',
    created: c.createdAt,
    model: c.model,
    choices,
    service_tier: typeof answer.service_tier === 'string' ? answer.service_tier : null,
    moderation: null,
    metadata: c.metadata,
  };
  const usage = isObject(answer.usage) ? { ...answer.usage, ...c.usage } : c.usage;
  if (usage) out.usage = usage;
  if (typeof answer.system_fingerprint === 'string') out.system_fingerprint = answer.system_fingerprint;
  return out;
}

interface Cursor {
  after?: string;
  limit?: number;
  order?: 'asc' | 'desc';
}

function listOf<T extends { id: string }>(data: T[], hasMore: boolean) {
  return {
    object: 'list' as const,
    data,
    first_id: data[0]?.id ?? null,
    last_id: data[data.length - 1]?.id ?? null,
    has_more: hasMore,
  };
}

const KNOWN_QUERY = new Set(['after', 'limit', 'order', 'model']);
const METADATA_PARAM = /^metadata\[(.+)\]$/;

/** `metadata[k]=v` pairs of the query string; every other unknown parameter named. */
function listFilter(query: Record<string, unknown>): StoredCompletionFilter {
  const metadata: Record<string, string> = {};
  const issues: ValidationIssue[] = [];
  for (const [name, value] of Object.entries(query)) {
    if (KNOWN_QUERY.has(name)) continue;
    const key = METADATA_PARAM.exec(name)?.[1];
    if (key === undefined) {
      issues.push({
        loc: ['query', name],
        msg: 'unknown parameter (filter metadata with metadata[key]=value)',
        type: 'unknown',
      });
    } else if (typeof value !== 'string') {
      issues.push({ loc: ['query', name], msg: 'give one value per metadata key', type: 'string_type' });
    } else metadata[key] = value;
  }
  issues.push(...metadataIssues(metadata, ['query', 'metadata']));
  if (issues.length > 0) throw badRequest(issues);
  const filter: StoredCompletionFilter = {};
  if (Object.keys(metadata).length > 0) filter.metadata = metadata;
  if (typeof query.model === 'string') filter.model = query.model;
  return filter;
}

export async function listCompletions(
  ports: StoredCompletionPorts,
  projectId: string,
  query: Cursor & Record<string, unknown>,
) {
  const filter = listFilter(query);
  // Read-your-writes: a completion answered a moment ago is listed.
  await ports.flush();
  const page = await pageStoredCompletions(ports.db, projectId, filter, {
    ...(query.after === undefined ? {} : { after: query.after }),
    limit: query.limit ?? 20,
    order: query.order ?? 'asc',
  });
  return listOf(page.data.map(chatCompletionObject), page.hasMore);
}

export async function retrieveCompletion(ports: StoredCompletionPorts, projectId: string, id: string) {
  return chatCompletionObject(toStoredCompletion(await requireRow(ports, projectId, id)));
}

/**
 * Replaces the client's metadata: the gateway's keys, and values other than strings (which OpenAI's
 * metadata cannot hold, e.g. an `expected` object from the X-Evalgate-Metadata header), are kept.
 */
export async function updateCompletion(
  ports: StoredCompletionPorts,
  projectId: string,
  id: string,
  body: unknown,
) {
  const issues: ValidationIssue[] = [];
  if (!isObject(body))
    issues.push({ loc: ['body'], msg: 'must be an object with metadata', type: 'object_type' });
  else {
    if (!('metadata' in body))
      issues.push({ loc: ['body', 'metadata'], msg: 'is required', type: 'missing' });
    else issues.push(...metadataIssues(body.metadata, ['body', 'metadata']));
    for (const k of Object.keys(body)) {
      if (k !== 'metadata')
        issues.push({
          loc: ['body', k],
          msg: 'unknown field (only metadata can be updated)',
          type: 'unknown',
        });
    }
  }
  if (issues.length > 0) throw badRequest(issues);
  const given = ((body as JsonObject).metadata ?? {}) as Record<string, string>;
  const row = await requireRow(ports, projectId, id);
  const before = Object.entries(parseJson<JsonObject>(row.metadata, {}));
  const gateway = before.filter(([k]) => GATEWAY_METADATA_KEYS.includes(k));
  const kept = before.filter(([k, v]) => !GATEWAY_METADATA_KEYS.includes(k) && typeof v !== 'string');
  // The gateway's keys win, as at creation: a client key named `store` cannot unmark the completion.
  const metadata = { ...Object.fromEntries(kept), ...given, ...Object.fromEntries(gateway) };
  if (!(await writeStoredMetadata(ports.db, projectId, row.id, metadata))) throw notFound(id);
  return retrieveCompletion(ports, projectId, id);
}

/** The completion is no longer served; its task log stays (the container's record of the call). */
export async function deleteCompletion(ports: StoredCompletionPorts, projectId: string, id: string) {
  const row = await requireRow(ports, projectId, id);
  const metadata = { ...parseJson<JsonObject>(row.metadata, {}), store: false, deleted: true };
  if (!(await writeStoredMetadata(ports.db, projectId, row.id, metadata))) throw notFound(id);
  return { id, object: 'chat.completion.deleted' as const, deleted: true };
}

const textOf = (parts: unknown[]): string =>
  parts
    .filter(isObject)
    .map((p) => (p.type === 'text' && typeof p.text === 'string' ? p.text : ''))
    .join('');

/** The request's messages as `ChatCompletionStoreMessage`s, ids `<completion id>-<index>`. */
export async function listMessages(
  ports: StoredCompletionPorts,
  projectId: string,
  id: string,
  query: Cursor,
) {
  const stored = toStoredCompletion(await requireRow(ports, projectId, id));
  let messages = stored.input.map((m, i) => {
    const parts = Array.isArray(m.content) ? m.content.filter(isObject) : null;
    return {
      ...m,
      id: `${stored.id}-${i}`,
      role: typeof m.role === 'string' ? m.role : 'user',
      content: typeof m.content === 'string' ? m.content : parts ? textOf(parts) : null,
      content_parts: parts,
      refusal: typeof m.refusal === 'string' ? m.refusal : null,
    };
  });
  if (query.order === 'desc') messages = messages.reverse();
  if (query.after !== undefined) {
    const at = messages.findIndex((m) => m.id === query.after);
    messages = at === -1 ? [] : messages.slice(at + 1);
  }
  const limit = query.limit ?? 20;
  return listOf(messages.slice(0, limit), messages.length > limit);
}
