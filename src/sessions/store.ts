import { type Insertable, sql, type Transaction } from 'kysely';
import type { Database, TaskLogTable } from '../db/schema.js';
import type { SessionAssignment } from '../db/schema-sessions.js';
import { parseJson } from '../shared/json.js';

type LogRow = Insertable<TaskLogTable>;

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

/** The later of two ISO times. */
function later(a: string, b: string): string {
  if (a > b) return a;
  return b;
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
  const created = deltas.filter((d) => d.created !== null);
  if (created.length > 0) {
    await trx
      .insertInto('task_sessions')
      .values(
        created.map((d) => {
          const t = totalsOf(d.rows);
          return {
            id: d.id,
            project_id: where.projectId,
            container_id: where.containerId,
            assigned_by: d.created!.assignedBy,
            external_key: d.created!.externalKey,
            started_at: d.created!.startedAt,
            last_activity_at: t.last,
            turn_count: t.turns,
            error_count: t.errors,
            prompt_tokens: t.promptTokens,
            completion_tokens: t.completionTokens,
            cost: t.cost,
            latency_ms: t.latencyMs,
            models: JSON.stringify(t.models),
          };
        }),
      )
      .execute();
  }
  const grown = deltas.filter((d) => d.created === null);
  if (grown.length > 0) {
    const known = await trx
      .selectFrom('task_sessions')
      .select(['id', 'models', 'last_activity_at'])
      .where(
        'id',
        'in',
        grown.map((d) => d.id),
      )
      .execute();
    const byId = new Map(known.map((s) => [s.id, s]));
    for (const d of grown) {
      const before = byId.get(d.id);
      if (!before) continue;
      const t = totalsOf(d.rows);
      const models = parseJson<string[]>(before.models, []);
      for (const m of t.models) if (!models.includes(m)) models.push(m);
      await trx
        .updateTable('task_sessions')
        .set((eb) => ({
          turn_count: eb('turn_count', '+', t.turns),
          error_count: eb('error_count', '+', t.errors),
          prompt_tokens: sql<number>`prompt_tokens + ${t.promptTokens}`,
          completion_tokens: sql<number>`completion_tokens + ${t.completionTokens}`,
          cost: eb('cost', '+', t.cost),
          latency_ms: eb('latency_ms', '+', t.latencyMs),
          last_activity_at: later(t.last, before.last_activity_at),
          models: JSON.stringify(models),
        }))
        .where('id', '=', d.id)
        .execute();
    }
  }
  if (keys.size > 0) {
    await trx
      .insertInto('task_session_keys')
      .values(
        [...keys].map(([key, k]) => ({
          container_id: where.containerId,
          key,
          session_id: k.session,
          created_at: k.at,
        })),
      )
      .onConflict((oc) =>
        oc.columns(['container_id', 'key']).doUpdateSet((eb) => ({
          session_id: eb.ref('excluded.session_id'),
          created_at: eb.ref('excluded.created_at'),
        })),
      )
      .execute();
  }
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
