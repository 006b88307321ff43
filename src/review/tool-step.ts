import type { Kysely } from 'kysely';
import type { Database } from '../db/schema.js';
import { sessionLogs } from '../sessions/service.js';
import { lookupToolStep } from '../sessions/tool-step-read.js';
import { parseToolStepId, stepsOf, toolStepId } from '../sessions/tool-steps.js';
import { transcriptOf } from '../sessions/transcript.js';
import { ApiError } from '../shared/errors.js';

/**
 * Tool steps as annotation items: one tool call of a session (kind `tool_step`, ref
 * `<session id>#<tool call id>`), shown to a reviewer as the call (tool and arguments), its result, and
 * the conversation before it.
 */

type Db = Kysely<Database>;

/** A step a request names: its session and its tool call's id. */
export interface StepRef {
  session: string;
  tool_call_id: string;
}

/**
 * The refs of the steps a request names, each checked to be a tool call of a session of the project (422
 * naming the ones that are not, at their place in `tool_steps`). Each session is read once.
 */
export async function toolStepRefs(db: Db, projectId: string, steps: readonly StepRef[]): Promise<string[]> {
  const sessionIds = [...new Set(steps.map((s) => s.session))];
  const known = new Map<string, Set<string>>();
  if (sessionIds.length) {
    const found = await db
      .selectFrom('task_sessions')
      .select('id')
      .where('project_id', '=', projectId)
      .where('id', 'in', sessionIds)
      .execute();
    for (const { id } of found) {
      const calls = stepsOf(id, transcriptOf(await sessionLogs(db, id))).map((s) => s.tool_call_id);
      known.set(id, new Set(calls));
    }
  }
  const issues = steps.flatMap((s, i) => {
    const calls = known.get(s.session);
    if (!calls)
      return [
        {
          loc: ['body', 'tool_steps', i, 'session'],
          msg: `Session '${s.session}' not found in this project`,
          type: 'not_found',
        },
      ];
    if (calls.has(s.tool_call_id)) return [];
    return [
      {
        loc: ['body', 'tool_steps', i, 'tool_call_id'],
        msg: `Session '${s.session}' has no tool call '${s.tool_call_id}'`,
        type: 'not_found',
      },
    ];
  });
  if (issues.length) throw ApiError.validation(issues);
  return [...new Set(steps.map((s) => toolStepId(s.session, s.tool_call_id)))];
}

/** What a tool step item shows and exports: the call as input, its result as output, the context beside. */
export interface StepContent {
  input: unknown;
  output: unknown;
  metadata: Record<string, unknown>;
}

/**
 * A tool step item's content: input `{tool, arguments}`, output the tool's result, and in the metadata
 * where it is (session, tool call, turn, task log) and `context`, the conversation before the call. A
 * step whose session is gone (or no longer holds the call) shows nulls.
 */
export async function toolStepContent(db: Db, projectId: string, ref: string): Promise<StepContent> {
  const named = parseToolStepId(ref);
  const none: StepContent = { input: null, output: null, metadata: {} };
  if (!named) return none;
  const c = await lookupToolStep(db, projectId, named.session, named.toolCallId);
  if (typeof c === 'string') return none;
  return {
    input: { tool: c.name, arguments: c.arguments },
    output: c.result,
    metadata: {
      session_id: c.session_id,
      tool_call_id: c.tool_call_id,
      tool_name: c.name,
      turn: c.turn,
      task_log_id: c.task_log_id,
      context: c.context,
    },
  };
}
