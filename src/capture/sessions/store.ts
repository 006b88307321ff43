import { type Insertable, sql, type Transaction } from 'kysely';
import { insertRows } from '../../db/bulk.js';
import type { Database, TaskLogTable } from '../../db/schema.js';
import type { SessionAssignment } from '../../db/schema-sessions.js';
import { parseJson } from '../../shared/json.js';

type LogRow = Insertable<TaskLogTable>;

/** Rows per multi-row statement (PostgreSQL; SQLite runs one cached single-row statement per row). */
const STATEMENT_ROWS = 200;

/** What one call says about its session. */
export interface CallClues {
  /** `X-Evalgate-Session` (or an ingested span's conversation id). */
  header: string | null;
  /** The task log whose response a Responses `previous_response_id` names. */
  previousLog: string | null;
  /** A Responses `conversation` id. */
  conversation: string | null;
  trace: string | null;
  /** Hash of the input up to its last answer (see `conversationHashes`). */
  continues: string | null;
  /** Hash of the input and the call's own answer. */
  soFar: string | null;
  /** *continues* without system events, where a tool call links the calls (a handoff). */
  handoffContinues: string | null;
  /** *so far* without system events, where the answer ends with a tool call. */
  handoffSoFar: string | null;
}

/** The calls a batch adds to one session, and how it started when the batch started it. */
export interface SessionDelta {
  id: string;
  created: { assignedBy: SessionAssignment; externalKey: string | null; startedAt: string } | null;
  rows: LogRow[];
}

interface Totals {
  turns: number;
  errors: number;
  promptTokens: number;
  completionTokens: number;
  cost: number;
  latencyMs: number;
  last: string;
  models: string[];
}

function totalsOf(rows: LogRow[]): Totals {
  const t: Totals = {
    turns: 0,
    errors: 0,
    promptTokens: 0,
    completionTokens: 0,
    cost: 0,
    latencyMs: 0,
    last: '',
    models: [],
  };
  for (const row of rows) {
    t.turns++;
    if (row.status === 'error') t.errors++;
    const usage = parseJson<{ prompt_tokens?: unknown; completion_tokens?: unknown } | null>(
      row.usage ?? null,
      null,
    );
    if (typeof usage?.prompt_tokens === 'number') t.promptTokens += usage.prompt_tokens;
    if (typeof usage?.completion_tokens === 'number') t.completionTokens += usage.completion_tokens;
    t.cost += row.cost;
    t.latencyMs += row.latency_ms;
    if (row.created_at > t.last) t.last = row.created_at;
    if (!t.models.includes(row.model)) t.models.push(row.model);
  }
  return t;
}

/**
 * Stores what one container's batch did to its sessions: sessions it started (with their totals),
 * totals added to sessions that existed, and the keys later calls will find them by (a key made again
 * points at the newer call's session).
 */
export async function storeSessions(
  trx: Transaction<Database>,
  where: { projectId: string; containerId: string },
  deltas: SessionDelta[],
  keys: Map<string, { session: string; at: string }>,
): Promise<void> {
  // The models of sessions that existed (to add this batch's to), in one read.
  const grown = deltas.filter((d) => d.created === null);
  const known = new Map<string, string>();
  if (grown.length > 0) {
    const rows = await trx
      .selectFrom('task_sessions')
      .select(['id', 'models'])
      .where(
        'id',
        'in',
        grown.map((d) => d.id),
      )
      .execute();
    for (const r of rows) known.set(r.id, r.models);
  }
  const values = [];
  for (const d of deltas) {
    const t = totalsOf(d.rows);
    let models = t.models;
    if (d.created === null) {
      const before = known.get(d.id);
      // A session gone meanwhile (deleted with its project) is not made again.
      if (before === undefined) continue;
      models = parseJson<string[]>(before, []);
      for (const m of t.models) if (!models.includes(m)) models.push(m);
    }
    values.push({
      id: d.id,
      project_id: where.projectId,
      container_id: where.containerId,
      // For a session that existed these four are not written (the conflict keeps the stored ones).
      assigned_by: d.created?.assignedBy ?? 'continuity',
      external_key: d.created?.externalKey ?? null,
      started_at: d.created?.startedAt ?? t.last,
      last_activity_at: t.last,
      turn_count: t.turns,
      error_count: t.errors,
      prompt_tokens: t.promptTokens,
      completion_tokens: t.completionTokens,
      cost: t.cost,
      latency_ms: t.latencyMs,
      models: JSON.stringify(models),
    });
  }
  // Started and grown sessions in one statement per batch of rows (its text compiled once): a grown one
  // adds the batch's totals to its own (and is open again if it had been ended).
  await insertRows(trx, 'sessions:upsert', values, STATEMENT_ROWS, (batch) =>
    trx
      .insertInto('task_sessions')
      .values(batch)
      .onConflict((oc) =>
        oc.column('id').doUpdateSet({
          turn_count: sql<number>`task_sessions.turn_count + excluded.turn_count`,
          error_count: sql<number>`task_sessions.error_count + excluded.error_count`,
          prompt_tokens: sql<number>`task_sessions.prompt_tokens + excluded.prompt_tokens`,
          completion_tokens: sql<number>`task_sessions.completion_tokens + excluded.completion_tokens`,
          cost: sql<number>`task_sessions.cost + excluded.cost`,
          latency_ms: sql<number>`task_sessions.latency_ms + excluded.latency_ms`,
          last_activity_at: sql<string>`case when excluded.last_activity_at > task_sessions.last_activity_at then excluded.last_activity_at else task_sessions.last_activity_at end`,
          models: sql<string>`excluded.models`,
          // A call after an explicit end opens the session again.
          ended_at: null,
        }),
      ),
  );
  const keyRows = [...keys].map(([key, k]) => ({
    container_id: where.containerId,
    key,
    session_id: k.session,
    created_at: k.at,
  }));
  await insertRows(trx, 'sessions:keys', keyRows, STATEMENT_ROWS, (batch) =>
    trx
      .insertInto('task_session_keys')
      .values(batch)
      .onConflict((oc) =>
        oc.columns(['container_id', 'key']).doUpdateSet((eb) => ({
          session_id: eb.ref('excluded.session_id'),
          created_at: eb.ref('excluded.created_at'),
        })),
      ),
  );
}

/**
 * Deletes up to `limit` keys that can no longer match: continuity hashes and trace ids older than
 * `before` (header and conversation keys name their sessions for good). Bounded: it walks the keys'
 * time index from the oldest, so its cost does not grow with the table.
 */
export async function pruneSessionKeys(
  trx: Transaction<Database>,
  before: string,
  limit: number,
): Promise<number> {
  const old = await trx
    .selectFrom('task_session_keys')
    .select(['container_id', 'key'])
    .where('created_at', '<', before)
    .where((eb) => eb.or([eb('key', 'like', 'p:%'), eb('key', 'like', 't:%')]))
    .orderBy('created_at')
    .limit(limit)
    .execute();
  let deleted = 0;
  const byContainer = new Map<string, string[]>();
  for (const k of old) {
    const keys = byContainer.get(k.container_id) ?? [];
    keys.push(k.key);
    byContainer.set(k.container_id, keys);
  }
  for (const [containerId, keys] of byContainer) {
    const res = await trx
      .deleteFrom('task_session_keys')
      .where('container_id', '=', containerId)
      .where('key', 'in', keys)
      .where('created_at', '<', before)
      .executeTakeFirst();
    deleted += Number(res.numDeletedRows);
  }
  return deleted;
}
