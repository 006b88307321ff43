import type { Insertable, Transaction } from 'kysely';
import type { Database, TaskLogTable } from '../../db/schema.js';
import type { SessionAssignment } from '../../db/schema-sessions.js';
import { dialectNamed } from '../../llm/dialects/registry.js';
import { newId } from '../../shared/ids.js';
import { parseJson } from '../../shared/json.js';
import { answerEvents, conversationHashes, inputEvents } from './canonical.js';
import { type CallClues, pruneSessionKeys, type SessionDelta, storeSessions } from './store.js';

type LogRow = Insertable<TaskLogTable>;

/** A later call continues an earlier one only if it starts within this long of the earlier call. */
export const CONTINUITY_WINDOW_MS = 30 * 60_000;

/** Key prefixes of `task_session_keys`: each rule's keys live apart. */
const KEY = {
  header: 'h:',
  conversation: 'c:',
  trace: 't:',
  continuity: 'p:',
  /** Continuity past a handoff: under `p:` too, so that it expires with the window (`p:h:` is no hash). */
  handoff: 'p:h:',
} as const;

/**
 * The keys under which a session named by `key` is found: the `X-Evalgate-Session` value (or an ingested
 * span's conversation id) and the Responses `conversation` id. Both name their session for good.
 */
export function namingKeys(key: string): string[] {
  return [KEY.header + key, KEY.conversation + key];
}

/** Keys deleted at most per prune (the writer prunes with a batch, at most once a minute). */
const PRUNE_LIMIT = 2_000;

/** Deletes continuity hashes and trace keys past the window, a bounded number at a time. */
export function pruneExpiredKeys(trx: Transaction<Database>, now = Date.now()): Promise<number> {
  return pruneSessionKeys(trx, new Date(now - CONTINUITY_WINDOW_MS).toISOString(), PRUNE_LIMIT);
}

/**
 * What a call says about its session, read from its row (off the request path, in the writer's batch).
 * `withHashes`: whether to read the conversation for continuity's
 * hashes (the input and the answer, parsed and hashed); a container without continuity never asks.
 */
export function cluesOf(row: LogRow, sessionKey: string | undefined, withHashes = true): CallClues {
  const clues: CallClues = {
    header: sessionKey && sessionKey !== '' ? sessionKey : null,
    previousLog: null,
    conversation: null,
    // An ingested span's conversation id arrives as `sessionKey`, as an X-Evalgate-Session header does.
    // A trace joins calls only when it came from the caller (a `traceparent`, an ingested span under a
    // parent): a call without one is given a fresh trace of its own, which says nothing of its session.
    trace: row.parent_span_id ? (row.trace_id ?? null) : null,
    continues: null,
    soFar: null,
    handoffContinues: null,
    handoffSoFar: null,
  };
  const metadata = parseJson<Record<string, unknown>>(row.metadata ?? '{}', {});
  const dialect = dialectNamed(metadata.route);
  if (dialect && !dialect.conversational) return clues;
  const requestText = row.request ?? '';
  const continued = dialect?.continuation(requestText) ?? null;
  if (continued) {
    clues.previousLog = continued.previousLog;
    clues.conversation = continued.conversation;
  }
  if (!withHashes) return clues;
  const input = inputEvents(parseJson<unknown>(row.input ?? 'null', null));
  if (input === null || input.length === 0) return clues;
  const response = parseJson<unknown>(row.response ?? 'null', null);
  const hashes = conversationHashes(input, answerEvents(response));
  clues.continues = hashes.continues;
  clues.soFar = hashes.soFar;
  clues.handoffContinues = hashes.handoffContinues;
  clues.handoffSoFar = hashes.handoffSoFar;
  return clues;
}

/**
 * The session a call continues by its conversation, within the window: the call whose input and answer
 * its input repeats; failing that, the call whose answer was the tool call this input answers, the
 * system prompt set aside (a handoff: the next agent's prompt replaced the first one, the rest is the
 * same conversation, tool call ids included).
 */
function continued(
  keys: Map<string, { session: string; at: string }>,
  clues: CallClues,
  at: string,
): string | undefined {
  const within = (key: string) => {
    const hit = keys.get(key);
    return hit && Date.parse(at) - Date.parse(hit.at) <= CONTINUITY_WINDOW_MS ? hit.session : undefined;
  };
  return (
    (clues.continues ? within(KEY.continuity + clues.continues) : undefined) ??
    (clues.handoffContinues ? within(KEY.handoff + clues.handoffContinues) : undefined)
  );
}

interface Pending {
  row: LogRow;
  clues: CallClues;
}

/**
 * How a call's session is found: by its clues, with the session key it came with (`X-Evalgate-Session`,
 * an ingested span's conversation id), or `null` for a call recorded with its session id (kept as it is).
 */
export type SessionAsk = { key: string | undefined } | null;

/**
 * Assigns the calls of one container's batch to sessions, in this order: the `X-Evalgate-Session`
 * header; a Responses `previous_response_id` (the session of the call that produced it) or
 * `conversation`; a trace id shared with earlier calls; then, where the container keeps continuity on,
 * the conversation so far: a call whose input repeats an earlier call's input and answer (within
 * CONTINUITY_WINDOW_MS) joins that call's session. A call matched by none starts a session when it has
 * a key (header, conversation, trace) or continuity is on; otherwise it has none. Sets `session_id` on
 * the rows in place; runs inside the writer's transaction, after the container's counter row is locked,
 * so two writers never assign one container's calls at once. Every look-up is by exact key.
 */
export async function assignSessions(
  trx: Transaction<Database>,
  containerId: string,
  calls: { row: LogRow; ask: SessionAsk }[],
): Promise<void> {
  // A call that came with its session id keeps it; the others are assigned afresh (a retried batch included).
  const asked = calls.filter((c) => c.ask !== null);
  if (asked.length === 0) return;
  const container = await trx
    .selectFrom('containers')
    .select(['project_id', 'session_continuity'])
    .where('id', '=', containerId)
    .executeTakeFirst();
  if (!container) return;
  const continuity = (container.session_continuity ?? 1) !== 0;
  const pending: Pending[] = asked.map(({ row, ask }) => {
    row.session_id = null;
    return { row, clues: cluesOf(row, ask?.key, continuity) };
  });

  const wanted = new Set<string>();
  const previousLogs = new Set<string>();
  for (const { clues } of pending) {
    if (clues.header) wanted.add(KEY.header + clues.header);
    if (clues.conversation) wanted.add(KEY.conversation + clues.conversation);
    if (clues.trace) wanted.add(KEY.trace + clues.trace);
    if (continuity && clues.continues) wanted.add(KEY.continuity + clues.continues);
    if (continuity && clues.handoffContinues) wanted.add(KEY.handoff + clues.handoffContinues);
    if (clues.previousLog) previousLogs.add(clues.previousLog);
  }
  /** key → session and when the key was made, from the table and then from this batch. */
  const keys = new Map<string, { session: string; at: string }>();
  if (wanted.size > 0) {
    const found = await trx
      .selectFrom('task_session_keys')
      .select(['key', 'session_id', 'created_at'])
      .where('container_id', '=', containerId)
      .where('key', 'in', [...wanted])
      .execute();
    for (const k of found) keys.set(k.key, { session: k.session_id, at: k.created_at });
  }
  /** log id → session, for `previous_response_id`. */
  const logSessions = new Map<string, string>();
  if (previousLogs.size > 0) {
    const found = await trx
      .selectFrom('task_logs')
      .select(['id', 'session_id'])
      .where('id', 'in', [...previousLogs])
      .where('container_id', '=', containerId)
      .execute();
    for (const l of found) if (l.session_id) logSessions.set(l.id, l.session_id);
  }

  const deltas = new Map<string, SessionDelta>();
  const newKeys = new Map<string, { session: string; at: string }>();
  const setKey = (key: string, session: string, at: string) => {
    keys.set(key, { session, at });
    newKeys.set(key, { session, at });
  };
  for (const { row, clues } of pending) {
    const at = row.created_at;
    const byKey = (key: string | null) => (key === null ? undefined : keys.get(key)?.session);
    const header = clues.header ? KEY.header + clues.header : null;
    const conversation = clues.conversation ? KEY.conversation + clues.conversation : null;
    const trace = clues.trace ? KEY.trace + clues.trace : null;
    let session =
      byKey(header) ??
      (clues.previousLog ? logSessions.get(clues.previousLog) : undefined) ??
      byKey(conversation) ??
      byKey(trace);
    if (session === undefined && continuity) session = continued(keys, clues, at);
    let assignedBy: SessionAssignment | null = null;
    let externalKey: string | null = null;
    if (session === undefined) {
      if (clues.header) [assignedBy, externalKey] = ['header', clues.header];
      else if (clues.conversation) [assignedBy, externalKey] = ['conversation', clues.conversation];
      else if (clues.trace) [assignedBy, externalKey] = ['trace', clues.trace];
      else if (continuity && (clues.soFar || clues.continues)) assignedBy = 'continuity';
      if (assignedBy === null) continue;
      session = newId('sess');
    }
    row.session_id = session;
    logSessions.set(row.id, session);
    for (const key of [header, conversation]) if (key && !keys.has(key)) setKey(key, session, at);
    // A trace's key is refreshed by each of its calls: it expires with the window after the last one.
    if (trace) setKey(trace, session, at);
    if (continuity && clues.soFar) setKey(KEY.continuity + clues.soFar, session, at);
    if (continuity && clues.handoffSoFar) setKey(KEY.handoff + clues.handoffSoFar, session, at);
    let delta = deltas.get(session);
    if (!delta) {
      delta = {
        id: session,
        created: assignedBy ? { assignedBy, externalKey, startedAt: at } : null,
        rows: [],
      };
      deltas.set(session, delta);
    }
    delta.rows.push(row);
  }
  await storeSessions(trx, { projectId: container.project_id, containerId }, [...deltas.values()], newKeys);
}
