import type { Kysely } from 'kysely';
import type { Database } from '../db/schema.js';
import { ApiError } from '../shared/errors.js';
import type { ToolStepDetail } from './schemas.js';
import { scoresOf, sessionLogs } from './service.js';
import { inContext, stepsOf, type ToolStepInContext, toolStepId } from './tool-steps.js';
import { transcriptOf } from './transcript.js';

/**
 * One step of a session of the project, in context, or why there is none: the project has no such session
 * (another project's is not found either), or the session no tool call of that id among its calls (at
 * most the first `MAX_TURNS` of them, as a session run reads).
 */
export async function lookupToolStep(
  db: Kysely<Database>,
  projectId: string,
  sessionId: string,
  toolCallId: string,
): Promise<ToolStepInContext | 'no_session' | 'no_call'> {
  const session = await db
    .selectFrom('task_sessions')
    .select('id')
    .where('id', '=', sessionId)
    .where('project_id', '=', projectId)
    .executeTakeFirst();
  if (!session) return 'no_session';
  const t = transcriptOf(await sessionLogs(db, session.id));
  const step = stepsOf(session.id, t).find((s) => s.tool_call_id === toolCallId);
  return step ? inContext(step, t) : 'no_call';
}

/** `lookupToolStep`, with 404 where there is no such step. */
export async function findToolStep(
  db: Kysely<Database>,
  projectId: string,
  sessionId: string,
  toolCallId: string,
): Promise<ToolStepInContext> {
  const found = await lookupToolStep(db, projectId, sessionId, toolCallId);
  if (found === 'no_session') throw ApiError.notFound('Session', sessionId);
  if (found === 'no_call')
    throw new ApiError('not_found', `Session '${sessionId}' has no tool call '${toolCallId}'`, {
      resource: 'tool_call',
      ref: toolCallId,
      session: sessionId,
    });
  return found;
}

/** A tool step of the project's session as the API shows it, with the scores runs gave it. */
export async function getToolStep(
  db: Kysely<Database>,
  projectId: string,
  sessionId: string,
  toolCallId: string,
): Promise<ToolStepDetail> {
  const s = await findToolStep(db, projectId, sessionId, toolCallId);
  const id = toolStepId(s.session_id, s.tool_call_id);
  const scores = await scoresOf(db, projectId, [id]);
  return {
    object: 'tool_step',
    id,
    session_id: s.session_id,
    tool_call_id: s.tool_call_id,
    name: s.name,
    arguments: s.arguments,
    result: s.result,
    turn: s.turn,
    task_log_id: s.task_log_id,
    index: s.index,
    context: s.context,
    scores: scores.get(id) ?? [],
  };
}
