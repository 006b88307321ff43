import { type Kysely, type Selectable, sql } from 'kysely';
import { findContainer } from '../catalog/containers/repository.js';
import type { Database } from '../db/schema.js';
import type { TaskSessionTable } from '../db/schema-sessions.js';
import type { ListResponse, Page } from '../http/schemas.js';
import { ApiError } from '../shared/errors.js';
import { nowIso } from '../shared/ids.js';
import { parseJson } from '../shared/json.js';
import type { ListSessionsQuery, Session, SessionDetail } from './schemas.js';
import { toolStepId } from './tool-steps.js';
import { type SessionLog, transcriptOf } from './transcript.js';

export interface SessionContext {
  db: Kysely<Database>;
  /** Resolves once the calls answered so far are stored (and so assigned to their sessions). */
  settle?: () => Promise<void>;
  /** How much of a session one read returns (the defaults when left out). */
  limits?: SessionLimits;
}

/** The size limit of a session read (`EVALGATE_SESSION_MAX_TURNS`, `EVALGATE_SESSION_MAX_BYTES`). */
export interface SessionLimits {
  /** Turns one read returns at most: a longer session is read in pages of turns. */
  maxTurns: number;
  /** Bytes of stored calls (input and response) one read takes at most: more is refused with 413. */
  maxBytes: number;
}

export const DEFAULT_SESSION_LIMITS: SessionLimits = { maxTurns: 1000, maxBytes: 32 * 1024 * 1024 };

/** A session shows at most this many calls at once (the default limit). */
export const MAX_TURNS = DEFAULT_SESSION_LIMITS.maxTurns;

type SessionRow = Selectable<TaskSessionTable>;

export function toSession(row: SessionRow): Session {
  const prompt = Number(row.prompt_tokens);
  const completion = Number(row.completion_tokens);
  return {
    object: 'session',
    id: row.id,
    project_id: row.project_id,
    container_id: row.container_id,
    assigned_by: row.assigned_by,
    key: row.external_key,
    started_at: row.started_at,
    last_activity_at: row.last_activity_at,
    ended_at: row.ended_at,
    turn_count: Number(row.turn_count),
    error_count: Number(row.error_count),
    models: parseJson<string[]>(row.models, []),
    usage: { prompt_tokens: prompt, completion_tokens: completion, total_tokens: prompt + completion },
    cost: Math.round(Number(row.cost) * 1e9) / 1e9,
    latency_ms: Math.round(Number(row.latency_ms) * 1000) / 1000,
  };
}

/** The filters a list (and a session run's side) applies, already resolved to a container id. */
export interface SessionFilter {
  containerId?: string;
  /** Only these sessions (by id). */
  ids?: string[];
  since?: string;
  until?: string;
  model?: string;
  errors?: boolean;
  minTurns?: number;
  maxTurns?: number;
}

/** The sessions of a project matching the filter, newest first unless `oldestFirst`. */
export function sessionQuery(db: Kysely<Database>, projectId: string, f: SessionFilter) {
  let q = db.selectFrom('task_sessions').where('project_id', '=', projectId);
  if (f.containerId !== undefined) q = q.where('container_id', '=', f.containerId);
  if (f.ids !== undefined) q = q.where('id', 'in', f.ids.length ? f.ids : ['']);
  if (f.since !== undefined) q = q.where('last_activity_at', '>=', f.since);
  if (f.until !== undefined) q = q.where('started_at', '<', f.until);
  // Models are a JSON array of strings: a model's quoted name is in it exactly when the model is. The
  // escape character is named: SQLite has none by default (PostgreSQL's is the same backslash).
  if (f.model !== undefined) {
    const pattern = `%${JSON.stringify(f.model).replace(/[%_\\]/g, '\\$&')}%`;
    q = q.where(sql<boolean>`models like ${pattern} escape '\\'`);
  }
  if (f.errors === true) q = q.where('error_count', '>', 0);
  if (f.errors === false) q = q.where('error_count', '=', 0);
  if (f.minTurns !== undefined) q = q.where('turn_count', '>=', f.minTurns);
  if (f.maxTurns !== undefined) q = q.where('turn_count', '<=', f.maxTurns);
  return q;
}

async function containerFilter(db: Kysely<Database>, projectId: string, ref: string | undefined) {
  if (ref === undefined) return undefined;
  const c = await findContainer(db, projectId, ref);
  if (!c) throw ApiError.notFound('Container', ref);
  return c.id;
}

export async function listSessions(
  ctx: SessionContext,
  projectId: string,
  query: ListSessionsQuery,
  page: Page,
): Promise<ListResponse<Session>> {
  const iso = (t: string | undefined) => (t === undefined ? undefined : new Date(t).toISOString());
  const filter: SessionFilter = {
    containerId: await containerFilter(ctx.db, projectId, query.container),
    since: iso(query.since),
    until: iso(query.until),
    model: query.model,
    errors: query.errors,
    minTurns: query.min_turns,
    maxTurns: query.max_turns,
  };
  const counted = await sessionQuery(ctx.db, projectId, filter)
    .select((eb) => eb.fn.countAll<number | string>().as('n'))
    .executeTakeFirst();
  const rows = await sessionQuery(ctx.db, projectId, filter)
    .selectAll()
    .orderBy('started_at', 'desc')
    .orderBy('id', 'desc')
    .limit(page.limit)
    .offset(page.offset)
    .execute();
  return { object: 'list', data: rows.map(toSession), total: Number(counted?.n ?? 0) };
}

/** A session's calls in order (or one trace's calls in a container), at most MAX_TURNS, as the transcript reads them. */
export async function sessionLogs(
  db: Kysely<Database>,
  of: string | { traceId: string; containerId: string },
  limit = MAX_TURNS,
  offset = 0,
): Promise<SessionLog[]> {
  const rows = await db
    .selectFrom('task_logs')
    .select([
      'id',
      'model',
      'input',
      'response',
      'output',
      'status',
      'error',
      'usage',
      'cost',
      'latency_ms',
      'created_at',
    ])
    .where((eb) =>
      typeof of === 'string'
        ? eb('session_id', '=', of)
        : eb.and([eb('container_id', '=', of.containerId), eb('trace_id', '=', of.traceId)]),
    )
    .orderBy('created_at')
    .orderBy('seq')
    .limit(limit)
    .offset(offset)
    .execute();
  return rows.map((r) => ({
    id: r.id,
    model: r.model,
    input: parseJson<unknown>(r.input, null),
    response: parseJson<unknown>(r.response, null),
    output: r.output,
    status: r.status,
    error: parseJson<unknown>(r.error, null),
    usage: parseJson<SessionLog['usage']>(r.usage, null),
    cost: Number(r.cost),
    latency_ms: Number(r.latency_ms),
    created_at: r.created_at,
  }));
}

type Score = SessionDetail['scores'][number];

/** Scores runs of the project gave these items (task logs, sessions, tool steps), by item id. */
export async function scoresOf(
  db: Kysely<Database>,
  projectId: string,
  itemIds: string[],
): Promise<Map<string, Score[]>> {
  const out = new Map<string, Score[]>();
  if (itemIds.length === 0) return out;
  const rows = await db
    .selectFrom('run_samples as s')
    .innerJoin('runs as r', 'r.id', 's.run_id')
    .select(['s.item_id', 's.run_id', 's.evaluator_id', 's.score', 's.passed'])
    .where('r.project_id', '=', projectId)
    .where('s.item_id', 'in', itemIds)
    .where('s.status', '=', 'scored')
    .orderBy('s.created_at')
    .execute();
  for (const r of rows) {
    if (r.item_id === null) continue;
    const list = out.get(r.item_id) ?? [];
    list.push({
      run_id: r.run_id,
      evaluator_id: r.evaluator_id,
      score: r.score === null ? null : Number(r.score),
      passed: r.passed === null ? null : Number(r.passed) === 1,
    });
    out.set(r.item_id, list);
  }
  return out;
}

/** A session of the project, or 404 (another project's session is not found either). */
export async function requireSession(
  db: Kysely<Database>,
  projectId: string,
  id: string,
): Promise<SessionRow> {
  const row = await db
    .selectFrom('task_sessions')
    .selectAll()
    .where('id', '=', id)
    .where('project_id', '=', projectId)
    .executeTakeFirst();
  if (!row) throw ApiError.notFound('Session', id);
  return row;
}

/**
 * Ends a session of the project (404 otherwise): a session monitor scores it at its next sweep instead of
 * waiting for it to be idle. Ending an ended session keeps the first end's time. A call that joins the
 * session later opens it again.
 */
export async function endSession(db: Kysely<Database>, projectId: string, id: string): Promise<Session> {
  await db
    .updateTable('task_sessions')
    .set({ ended_at: nowIso() })
    .where('id', '=', id)
    .where('project_id', '=', projectId)
    .where('ended_at', 'is', null)
    .execute();
  return toSession(await requireSession(db, projectId, id));
}

/**
 * The stored size (input and response text, in bytes) of a session's calls in `[offset, offset+limit)`,
 * read before the calls themselves so that an oversized read is refused without loading it.
 */
async function turnsSize(db: Kysely<Database>, sessionId: string, offset: number, limit: number) {
  const page = db
    .selectFrom('task_logs')
    .select((eb) =>
      eb(
        eb.fn.coalesce(eb.fn('length', ['input']), eb.val(0)),
        '+',
        eb.fn.coalesce(eb.fn('length', ['response']), eb.val(0)),
      ).as('size'),
    )
    .where('session_id', '=', sessionId)
    .orderBy('created_at')
    .orderBy('seq')
    .limit(limit)
    .offset(offset)
    .as('page');
  const row = await db
    .selectFrom(page)
    .select((eb) => eb.fn.sum<number | string | null>('page.size').as('bytes'))
    .executeTakeFirst();
  return Number(row?.bytes ?? 0);
}

/** Which turns of a session one read returns: `turns_offset`, `turns_limit` (up to the limit). */
export interface TurnsQuery {
  turns_offset?: number;
  turns_limit?: number;
}

export async function getSession(
  ctx: SessionContext,
  projectId: string,
  id: string,
  query: TurnsQuery = {},
): Promise<SessionDetail> {
  const limits = ctx.limits ?? DEFAULT_SESSION_LIMITS;
  const offset = query.turns_offset ?? 0;
  const limit = query.turns_limit ?? limits.maxTurns;
  if (limit > limits.maxTurns) {
    throw ApiError.invalid(
      ['query', 'turns_limit'],
      `turns_limit is at most ${limits.maxTurns} (the server's EVALGATE_SESSION_MAX_TURNS); read longer sessions in pages with turns_offset`,
      'less_than_equal',
    );
  }
  const row = await requireSession(ctx.db, projectId, id);
  const bytes = await turnsSize(ctx.db, row.id, offset, limit);
  if (bytes > limits.maxBytes) {
    throw new ApiError(
      'payload_too_large',
      `Session '${id}': its turns ${offset}–${offset + limit - 1} hold ${bytes} bytes, over the limit of ${limits.maxBytes} bytes (EVALGATE_SESSION_MAX_BYTES); ask for fewer turns with turns_limit and turns_offset`,
      { resource: 'session', ref: id, bytes, max_bytes: limits.maxBytes, turn_count: Number(row.turn_count) },
    );
  }
  const logs = await sessionLogs(ctx.db, row.id, limit, offset);
  const t = transcriptOf(logs, offset);
  const stepId = (c: { id: string }) => (c.id === '' ? null : toolStepId(row.id, c.id));
  const stepIds = t.tool_calls.flatMap((c) => stepId(c) ?? []);
  const scores = await scoresOf(ctx.db, projectId, [row.id, ...logs.map((l) => l.id), ...stepIds]);
  return {
    ...toSession(row),
    scores: scores.get(row.id) ?? [],
    turns_offset: offset,
    turns: t.turns.map((turn) => ({
      ...turn,
      usage: turn.usage as Record<string, unknown> | null,
      scores: scores.get(turn.task_log_id) ?? [],
    })),
    tool_calls: t.tool_calls.map((c) => ({ ...c, scores: scores.get(stepId(c) ?? '') ?? [] })),
  };
}
