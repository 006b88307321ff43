import type { Kysely } from 'kysely';
import type { Drafted } from '../catalog/datasets/origins.js';
import type { Database } from '../db/schema.js';
import { ApiError } from '../shared/errors.js';
import { MAX_TURNS, requireSession, sessionLogs } from './service.js';
import { transcriptOf } from './transcript.js';

/**
 * A session as a dataset item, its trajectory the expected one: input = its first user message,
 * expected = its final answer, `expected_tool_calls` = its tool calls in order (`{name, arguments}`, what
 * the tool_call_match grader compares a sample's calls with), `turns` = each call's new input and its
 * answer (with its tool calls). The metadata counts its turns and names its models.
 */
export async function sessionDraft(
  db: Kysely<Database>,
  projectId: string,
  id: string,
): Promise<Drafted | null> {
  const session = await requireSession(db, projectId, id).catch((err: unknown) => {
    if (err instanceof ApiError && err.code === 'not_found') return null;
    throw err;
  });
  if (!session) return null;
  const logs = await sessionLogs(db, session.id, MAX_TURNS);
  const t = transcriptOf(logs);
  const first = t.turns[0]?.input.find((m) => m.role === 'user')?.content ?? null;
  const final = t.turns.at(-1)?.output.content ?? null;
  return {
    draft: {
      input: first,
      output: null,
      expected: final,
      metadata: {
        session_id: session.id,
        turn_count: t.turns.length,
        models: [...new Set(t.turns.map((turn) => turn.model))],
      },
      fields: {
        expected_tool_calls: t.tool_calls.map((c) => ({ name: c.name, arguments: c.arguments })),
        turns: t.turns.map((turn) => ({ input: turn.input, output: turn.output })),
      },
      origin: { kind: 'session', id: session.id },
    },
    needs: [],
  };
}
