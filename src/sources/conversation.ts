import type { Kysely } from 'kysely';
import { findContainer } from '../catalog/containers/repository.js';
import { callFailure, type Item } from '../catalog/items.js';
import type { Database } from '../db/schema.js';
import {
  conversationText,
  type SessionLog,
  type TranscriptToolCall,
  trajectoryText,
  transcriptOf,
} from '../sessions/transcript.js';
import { ApiError } from '../shared/errors.js';
import { isObject } from '../shared/json.js';
import type { SourceKind } from './types.js';

/**
 * Calls that make one conversation (a session's, a trace's) as one item: its first question in, its
 * last answer out, and the whole conversation for the evaluators (`Item.session`); an error of its
 * position when one of its calls failed. `extraToolCalls` are
 * tool executions the calls themselves do not show (a trace's tool spans), added to the trajectory.
 */
export function conversationItem(
  id: string,
  logs: SessionLog[],
  metadata: Record<string, unknown>,
  extraToolCalls: TranscriptToolCall[] = [],
): Item {
  const t = transcriptOf(logs);
  const seen = new Set(t.tool_calls.map((c) => c.id));
  const transcript = {
    ...t,
    tool_calls: [...t.tool_calls, ...extraToolCalls.filter((c) => !seen.has(c.id))],
  };
  const firstInput = t.turns[0]?.input.find((m) => m.role === 'user')?.content ?? '';
  const last = t.turns[t.turns.length - 1];
  const finalOutput = last?.output.content ?? '';
  const item: Item = {
    id,
    input: firstInput,
    output: finalOutput,
    expected: null,
    metadata,
    raw: metadata,
    session: {
      conversation: conversationText(transcript),
      trajectory: trajectoryText(transcript),
      final_output: finalOutput,
      first_input: firstInput,
      turns: transcript.turns,
      tool_calls: transcript.tool_calls,
    },
  };
  const failure = failedTurn(logs);
  if (failure) item.unreadable = failure;
  return item;
}

/**
 * The first failed call of a conversation, as the whole conversation's error: a judge shown a turn whose
 * answer was cut short (or never came) would grade the conversation as if that answer were the agent's,
 * so a conversation with a failed call is never scored (a run may leave such conversations out with the
 * `errors: false` filter).
 */
function failedTurn(logs: readonly SessionLog[]): { code: string; message: string } | null {
  for (const [i, log] of logs.entries()) {
    const failure = callFailure(log);
    if (failure) {
      return { code: failure.code, message: `Turn ${i + 1} of ${logs.length}: ${failure.message}` };
    }
  }
  return null;
}

/**
 * Resolves a side over a container's conversations (sessions, traces): the container by id or label (404
 * naming it), and the filter as given with `until` fixed at creation (default: now) and times normalised,
 * so that positions do not move as new conversations start.
 */
export function resolveFilteredContainer(type: string): NonNullable<SourceKind['request']>['resolve'] {
  return async (ctx, { projectId, name, body, range }) => {
    const ref = String(body.container ?? '');
    const c = await findContainer(ctx.db, projectId, ref);
    if (!c)
      throw new ApiError('not_found', `Container '${ref}' not found`, {
        resource: 'container',
        ref,
        loc: ['body', name, 'container'],
      });
    const given = isObject(body.filter) ? body.filter : {};
    const filter: Record<string, unknown> = { ...given, until: given.until ?? new Date().toISOString() };
    for (const key of ['since', 'until'] as const) {
      if (typeof filter[key] === 'string') filter[key] = new Date(filter[key]).toISOString();
    }
    return { type, ref: c.id, models: [], range, filter };
  };
}

/** The project a container belongs to (null when it is gone). */
export async function projectOf(db: Kysely<Database>, containerId: string): Promise<string | null> {
  const row = await db
    .selectFrom('containers')
    .select('project_id')
    .where('id', '=', containerId)
    .executeTakeFirst();
  return row?.project_id ?? null;
}
