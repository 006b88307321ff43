import type { Kysely } from 'kysely';
import { CONTENT_PERMISSION } from '../auth/content.js';
import type { Item, Range } from '../catalog/items.js';
import type { Database } from '../db/schema.js';
import type { ReadSide } from '../engine/plan.js';
import { MAX_TURNS, type SessionFilter, sessionLogs, sessionQuery } from '../sessions/service.js';
import { isObject } from '../shared/json.js';
import { conversationItem, projectOf, resolveFilteredContainer } from './conversation.js';
import type { SourceKind } from './types.js';
import { refView } from './view.js';

const TYPE = 'sessions';

/** The side's filter as stored in the plan (the request's, with `until` fixed at creation). */
export function filterOf(side: ReadSide): SessionFilter {
  const f = side.filter ?? {};
  const str = (v: unknown) => (typeof v === 'string' ? v : undefined);
  const num = (v: unknown) => (typeof v === 'number' ? v : undefined);
  return {
    containerId: side.ref,
    ids: Array.isArray(f.sessions) ? f.sessions.filter((v): v is string => typeof v === 'string') : undefined,
    since: str(f.since),
    until: str(f.until),
    model: str(f.model),
    errors: typeof f.errors === 'boolean' ? f.errors : undefined,
    minTurns: num(f.min_turns),
    maxTurns: num(f.max_turns),
  };
}

/** One session as an item: its first question in, its last answer out, the conversation beside. */
export async function sessionItem(
  db: Kysely<Database>,
  session: { id: string; turn_count: number; external_key?: string | null },
): Promise<Item> {
  const turns = Number(session.turn_count);
  // The key names the session for a ground truth of expected trajectories (rows paired by session).
  const metadata = {
    session_id: session.id,
    ...(session.external_key ? { session_key: session.external_key } : {}),
    turn_count: turns,
  };
  if (turns > MAX_TURNS) {
    // Scored on part of it, a session would be judged on a conversation it did not have.
    return {
      ...conversationItem(session.id, [], metadata),
      unreadable: {
        code: 'session_too_long',
        message: `The session has ${turns} turns; a session run reads sessions of at most ${MAX_TURNS} turns (filter with max_turns to leave longer ones out)`,
      },
    };
  }
  return conversationItem(session.id, await sessionLogs(db, session.id), metadata);
}

/**
 * A container's sessions, one position per session, oldest first (by start, then id): input = the
 * first user message, output = the last answer, and the whole conversation for the evaluators
 * (`Item.session`). The filter (since, until, model, errors, min_turns, max_turns) is fixed when the run
 * is created; `until` defaults to that moment, so that positions do not move as sessions start.
 */
export const sessionsSource: SourceKind = {
  type: TYPE,
  request: {
    fields: ['container'],
    optional: ['filter'],
    issues: (name, body) =>
      isObject(body.filter) && body.filter.tools !== undefined
        ? [
            {
              loc: ['body', name, 'filter', 'tools'],
              msg: "'tools' filters tool steps, not sessions",
              type: 'value_error',
            },
          ]
        : [],
    resolve: resolveFilteredContainer(TYPE),
  },
  reads: [{ permission: CONTENT_PERMISSION.session, what: "a container's sessions" }],
  recorded: true,
  // A session is no reference for itself: the same sessions as ground truth give scorers none.
  selfIsNoReference: true,
  async count(db, side) {
    const projectId = await projectOf(db, side.ref);
    if (projectId === null) return 0;
    const row = await sessionQuery(db, projectId, filterOf(side))
      .select((eb) => eb.fn.countAll<number | string>().as('n'))
      .executeTakeFirst();
    return Number(row?.n ?? 0);
  },
  async read(db, side, range: Range) {
    const projectId = await projectOf(db, side.ref);
    if (projectId === null || range.end <= range.start) return [];
    const rows = await sessionQuery(db, projectId, filterOf(side))
      .select(['id', 'turn_count', 'external_key'])
      .orderBy('started_at')
      .orderBy('id')
      .limit(range.end - range.start)
      .offset(range.start)
      .execute();
    const items: Item[] = [];
    for (const row of rows) items.push(await sessionItem(db, row));
    return items;
  },
  view: refView('container', TYPE),
  itemPage: 'sessions',
};
