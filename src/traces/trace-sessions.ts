import type { Kysely } from 'kysely';
import { namingKeys } from '../capture/sessions/assign.js';
import type { Database } from '../db/schema.js';

/**
 * A trace's session is its calls' session, as the log writer assigned it (a `sess_…` id), whichever rule
 * found it: a header, an ingested span's conversation id, the trace itself, continuity. A span's own
 * conversation id is only a key naming a session, so it is never shown as one.
 */

/** The session of each trace: that of its earliest call in one (one indexed read per page). */
export async function sessionsOfTraces(
  db: Kysely<Database>,
  projectId: string,
  traceIds: readonly string[],
): Promise<Map<string, string>> {
  const out = new Map<string, string>();
  if (traceIds.length === 0) return out;
  const rows = await db
    .selectFrom('task_logs')
    .select(['trace_id', 'session_id'])
    .where('project_id', '=', projectId)
    .where('trace_id', 'in', [...traceIds])
    .where('session_id', 'is not', null)
    .orderBy('created_at')
    .orderBy('id')
    .execute();
  for (const r of rows) {
    if (r.trace_id && r.session_id && !out.has(r.trace_id)) out.set(r.trace_id, r.session_id);
  }
  return out;
}

/**
 * The project's sessions that `ref` names: the session of that id, or the sessions that key names in the
 * project's containers (an `X-Evalgate-Session` value, an ingested span's conversation id, a Responses
 * conversation id). Every look-up is by primary key.
 */
export async function sessionsNamed(db: Kysely<Database>, projectId: string, ref: string): Promise<string[]> {
  const [byId, byKey] = await Promise.all([
    db
      .selectFrom('task_sessions')
      .select('id')
      .where('id', '=', ref)
      .where('project_id', '=', projectId)
      .execute(),
    db
      .selectFrom('task_session_keys')
      .innerJoin('containers', 'containers.id', 'task_session_keys.container_id')
      .select('task_session_keys.session_id')
      .where('containers.project_id', '=', projectId)
      .where('task_session_keys.key', 'in', namingKeys(ref))
      .execute(),
  ]);
  return [...new Set([...byId.map((r) => r.id), ...byKey.map((r) => r.session_id)])];
}

/**
 * Gives the spans of one trace their sessions, in place, from the trace's task logs: a model call's span
 * its call's session; a gateway call's span row (its log gone) the id it was stored with; another span
 * the session its conversation id named for the trace's calls, else none. Returns the trace's session,
 * that of its earliest call in one.
 */
export function placeSessions(
  spans: { span_id: string; source: 'gateway' | 'otlp'; session_id: string | null }[],
  logs: readonly { span_id?: string | null; session_id?: string | null; created_at: string }[],
): string | null {
  const bySpan = new Map<string, string>();
  for (const l of logs) if (l.span_id && l.session_id) bySpan.set(l.span_id, l.session_id);
  const byKey = new Map<string, string>();
  for (const s of spans) {
    const session = bySpan.get(s.span_id);
    if (session !== undefined && s.session_id !== null && s.source === 'otlp')
      byKey.set(s.session_id, session);
  }
  for (const s of spans) {
    const own = bySpan.get(s.span_id);
    if (own !== undefined) s.session_id = own;
    else if (s.source !== 'gateway')
      s.session_id = s.session_id === null ? null : (byKey.get(s.session_id) ?? null);
  }
  const first = logs
    .filter((l) => Boolean(l.session_id))
    .sort((a, b) => a.created_at.localeCompare(b.created_at))[0];
  return first?.session_id ?? null;
}
