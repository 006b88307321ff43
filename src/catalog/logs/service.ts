import type { Readable } from 'node:stream';
import type { Kysely } from 'kysely';
import { insertLogRows } from '../../capture/task-log-store.js';
import type { Database } from '../../db/schema.js';
import type { ListResponse, Page } from '../../http/schemas.js';
import { toIssues, validatorCompiler } from '../../http/validation.js';
import { chatAnswer } from '../../shared/chat-answer.js';
import { ApiError, type ValidationIssue } from '../../shared/errors.js';
import { newId, nowIso } from '../../shared/ids.js';
import { type JsonObject, parseJson } from '../../shared/json.js';
import { millis, usd } from '../../shared/numbers.js';
import { requireContainer } from '../containers/service.js';
import { parseLine, spoolNdjson, type UploadContext } from '../json-lines.js';
import { pageWindow, parseRange } from '../range.js';
import * as repo from './repository.js';
import { ImportLog, type LogImport, type TaskLog } from './schemas.js';

export interface LogContext extends UploadContext {
  /**
   * Resolves once the calls this server answered before it was called are stored (the task-log writer
   * records off the request path). Absent where nothing records calls.
   */
  settle?: () => Promise<void>;
}

/** How long a read of task logs waits for the writer at most: an outage must not hold reads up. */
export const SETTLE_WAIT_MS = 5_000;

/**
 * Read-your-writes for task logs: a read waits (at most SETTLE_WAIT_MS) until the calls answered before
 * it are stored, so that a list right after a call shows it.
 */
export function settled(ctx: LogContext): Promise<void> {
  return settleWithin(ctx.settle);
}

/** `flush()` (the task-log writer's), waited for at most SETTLE_WAIT_MS; its failure is not the caller's. */
export async function settleWithin(flush: (() => Promise<void>) | undefined): Promise<void> {
  if (!flush) return;
  let timer: NodeJS.Timeout | undefined;
  await Promise.race([
    flush().catch(() => {}),
    new Promise<void>((resolve) => {
      timer = setTimeout(resolve, SETTLE_WAIT_MS);
      timer.unref();
    }),
  ]);
  clearTimeout(timer);
}

export function toTaskLog(row: repo.LogRow): TaskLog {
  return {
    object: 'task_log',
    id: row.id,
    project_id: row.project_id,
    container_id: row.container_id,
    seq: Number(row.seq),
    model: row.model,
    input: parseJson<unknown>(row.input, null),
    output: row.output,
    request: parseJson<unknown>(row.request, null),
    response: parseJson<unknown>(row.response, null),
    usage: parseJson<TaskLog['usage']>(row.usage, null),
    latency_ms: millis(Number(row.latency_ms)),
    cost: usd(Number(row.cost)),
    status: row.status,
    error: parseJson<TaskLog['error']>(row.error, null),
    metadata: parseJson<JsonObject>(row.metadata, {}),
    created_at: row.created_at,
    session_id: row.session_id ?? null,
    prompt_id: row.prompt_id ?? null,
    prompt_version:
      row.prompt_version === null || row.prompt_version === undefined ? null : Number(row.prompt_version),
    trace_id: row.trace_id ?? null,
    span_id: row.span_id ?? null,
  };
}

/**
 * Which of a container's logs to list: the REST route's filters (range, model, since, prompt), and the narrower
 * ones of searches (until, text, an evaluator's verdict; the evaluator already resolved in the project).
 */
export interface LogQuery {
  range?: string;
  model?: string;
  since?: string;
  /** A stored prompt by id or name, and one of its versions. */
  prompt_id?: string;
  prompt_version?: number;
  until?: string;
  text?: string;
  scored?: repo.LogFilter['scored'];
}

export async function listLogs(
  db: Kysely<Database>,
  projectId: string,
  ref: string,
  query: LogQuery,
  page: Page,
): Promise<ListResponse<TaskLog>> {
  const container = await requireContainer(db, projectId, ref);
  const range = query.range === undefined ? null : parseRange(query.range, ['query', 'range']);
  const filter: repo.LogFilter = {};
  if (query.model !== undefined) filter.model = query.model;
  if (query.since !== undefined) filter.since = new Date(query.since).toISOString();
  if (query.prompt_version !== undefined && query.prompt_id === undefined) {
    throw ApiError.invalid(['query', 'prompt_version'], 'prompt_version filters the logs of one prompt_id');
  }
  if (query.prompt_id !== undefined) filter.prompt = { ref: query.prompt_id, projectId };
  if (query.prompt_version !== undefined) filter.promptVersion = query.prompt_version;
  if (query.until !== undefined) filter.until = new Date(query.until).toISOString();
  if (query.text !== undefined) filter.text = query.text;
  if (query.scored !== undefined) filter.scored = query.scored;
  const count = await repo.countLogs(db, container.id, filter);
  const { from, to, total } = pageWindow(range, page, count);
  const rows = await repo.readLogs(db, container.id, filter, from, to);
  return { object: 'list', data: rows.map(toTaskLog), total };
}

const record = (v: unknown): JsonObject | null =>
  typeof v === 'object' && v !== null && !Array.isArray(v) ? (v as JsonObject) : null;

/** An imported entry (already valid against ImportLog) as a row without seq; derives what is omitted. */
function draftOfImport(entry: ImportLog, projectId: string, containerId: string, now: string): repo.LogDraft {
  const request = record(entry.request);
  const response = record(entry.response);
  const content = chatAnswer(response).message?.content;
  const usage = entry.usage !== undefined ? entry.usage : (record(response?.usage) ?? null);
  const error = entry.error ?? null;
  return {
    id: newId('log'),
    project_id: projectId,
    container_id: containerId,
    model: entry.model,
    input: JSON.stringify(entry.input !== undefined ? entry.input : (request?.messages ?? null)),
    output: entry.output !== undefined ? entry.output : typeof content === 'string' ? content : null,
    request: JSON.stringify(entry.request ?? null),
    response: JSON.stringify(entry.response ?? null),
    usage: usage === null ? null : JSON.stringify(usage),
    latency_ms: entry.latency_ms ?? 0,
    cost: entry.cost ?? 0,
    status: entry.status ?? (error ? 'error' : 'success'),
    error: error === null ? null : JSON.stringify(error),
    metadata: JSON.stringify(entry.metadata ?? {}),
    created_at: entry.created_at !== undefined ? new Date(entry.created_at).toISOString() : now,
  };
}

/** Stores the drafts under consecutive seqs in one transaction; all or nothing. */
async function store(
  db: Kysely<Database>,
  containerId: string,
  count: number,
  drafts: AsyncIterable<repo.LogDraft> | Iterable<repo.LogDraft>,
): Promise<LogImport> {
  if (count === 0) {
    return {
      object: 'task_log.import',
      container_id: containerId,
      imported: 0,
      first_seq: null,
      last_seq: null,
    };
  }
  const first = await db.transaction().execute(async (trx) => {
    const start = await repo.reserveSeqs(trx, containerId, count);
    if (start === null) throw ApiError.notFound('Container', containerId);
    let seq = start;
    let rows: repo.NewLogRow[] = [];
    for await (const d of drafts) {
      rows.push({ ...d, seq: seq++ });
      if (rows.length >= 500) {
        await insertLogRows(trx, rows);
        rows = [];
      }
    }
    await insertLogRows(trx, rows);
    if (seq - start !== count) throw new Error(`log import: ${seq - start} rows, expected ${count}`);
    return start;
  });
  return {
    object: 'task_log.import',
    container_id: containerId,
    imported: count,
    first_seq: first,
    last_seq: first + count - 1,
  };
}

export async function importLogs(
  db: Kysely<Database>,
  projectId: string,
  ref: string,
  entries: ImportLog[],
): Promise<LogImport> {
  const container = await requireContainer(db, projectId, ref);
  const now = nowIso();
  const drafts = entries.map((e) => draftOfImport(e, projectId, container.id, now));
  return store(db, container.id, drafts.length, drafts);
}

let checkEntry: ReturnType<typeof validatorCompiler> | null = null;

function entryIssues(value: unknown): ValidationIssue[] {
  checkEntry ??= validatorCompiler({ schema: ImportLog, httpPart: 'body', method: 'POST', url: '' });
  if (checkEntry(value)) return [];
  const errors = (checkEntry as unknown as { errors?: Parameters<typeof toIssues>[1] | null }).errors ?? [];
  // toIssues puts 'body' first; the caller adds ['body', 'line', n].
  return toIssues('body', errors).map((i) => ({ ...i, loc: i.loc.slice(1) }));
}

/** A JSON-lines import, streamed through a spool; a bad line is a 422 naming it, with nothing stored. */
export async function importLogLines(
  ctx: LogContext,
  projectId: string,
  ref: string,
  body: Readable,
): Promise<LogImport> {
  const container = await requireContainer(ctx.db, projectId, ref);
  const now = nowIso();
  const spool = await spoolNdjson(body, {
    dir: ctx.spoolDir,
    maxBytes: ctx.uploadLimit,
    maxLineChars: ctx.maxRowChars,
    check(text) {
      const parsed = parseLine(text);
      if ('error' in parsed) return [{ loc: [], msg: parsed.error, type: 'json_invalid' }];
      return entryIssues(parsed.value);
    },
  });
  try {
    const drafts = async function* () {
      for await (const line of spool.rows()) {
        yield draftOfImport(JSON.parse(line) as ImportLog, projectId, container.id, now);
      }
    };
    return await store(ctx.db, container.id, spool.count, drafts());
  } finally {
    await spool.remove();
  }
}
