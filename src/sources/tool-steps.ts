import type { Kysely } from 'kysely';
import { CONTENT_PERMISSION } from '../auth/content.js';
import type { Item, Range } from '../catalog/items.js';
import type { Database } from '../db/schema.js';
import type { ReadSide } from '../engine/plan.js';
import { sessionLogs, sessionQuery } from '../sessions/service.js';
import { inContext, stepsOf, type ToolStep, toolStepId } from '../sessions/tool-steps.js';
import { type Transcript, trajectoryText, transcriptOf } from '../sessions/transcript.js';
import { isObject } from '../shared/json.js';
import { projectOf, resolveFilteredContainer } from './conversation.js';
import { filterOf } from './sessions.js';
import type { SourceKind } from './types.js';
import { refView } from './view.js';

const TYPE = 'tool_steps';

/** The tool names the side keeps (`filter.tools`), or null for every tool. */
function toolsOf(side: ReadSide): string[] | null {
  const tools = side.filter?.tools;
  return Array.isArray(tools) ? tools.filter((t): t is string => typeof t === 'string') : null;
}

/** A session of the side, with the steps it holds that the side keeps. */
interface SessionSteps {
  session: { id: string; external_key: string | null };
  transcript: Transcript;
  steps: ToolStep[];
}

/** A session of the side: its kept steps' count when known, and how to read them. */
interface SideSession {
  /** How many steps it keeps, known without reading its logs (null: not known yet). */
  known: number | null;
  read(): Promise<SessionSteps>;
}

/**
 * Kept steps per session, by session, `until` and tools: a session's calls before an `until` never change,
 * so a run's chunks after the first skip the sessions before their range without reading their logs
 * again. Bounded: emptied when full.
 */
const stepCounts = new Map<string, number>();
const STEP_COUNTS_MAX = 100_000;

/**
 * The side's sessions (oldest first, by start then id), each with its kept steps: its calls made before
 * the side's `until` (so that a session still running adds no steps, and positions do not move), at most
 * a session read's limit of them. With `tools`, a session whose answers never name one is skipped unread.
 */
async function sideSessions(db: Kysely<Database>, side: ReadSide): Promise<SideSession[]> {
  const projectId = await projectOf(db, side.ref);
  if (projectId === null) return [];
  const filter = filterOf(side);
  const tools = toolsOf(side);
  let q = sessionQuery(db, projectId, filter).select(['id', 'external_key']);
  if (tools !== null) {
    const names = tools.length ? tools : [''];
    q = q.where((eb) =>
      eb.exists(
        eb
          .selectFrom('task_logs')
          .select('task_logs.id')
          .whereRef('task_logs.session_id', '=', 'task_sessions.id')
          // A looser match than the name (LIKE's wildcards unescaped): the steps are checked by name after.
          .where((w) => w.or(names.map((n) => w('task_logs.response', 'like', `%${n}%`)))),
      ),
    );
  }
  const sessions = await q.orderBy('started_at').orderBy('id').execute();
  return sessions.map((session) => {
    // Without an `until` the steps may still grow: never counted ahead.
    const key =
      filter.until === undefined ? null : [session.id, filter.until, ...(tools ?? ['*'])].join('\u0000');
    return {
      known: key === null ? null : (stepCounts.get(key) ?? null),
      async read() {
        const logs = (await sessionLogs(db, session.id)).filter(
          (l) => filter.until === undefined || l.created_at < filter.until,
        );
        const transcript = transcriptOf(logs);
        const steps = stepsOf(session.id, transcript).filter((s) => tools === null || tools.includes(s.name));
        if (key !== null) {
          if (stepCounts.size >= STEP_COUNTS_MAX) stepCounts.clear();
          stepCounts.set(key, steps.length);
        }
        return { session, transcript, steps };
      },
    };
  });
}

/** One step as an item: input = the tool and its arguments, output = its result, the conversation before. */
function stepItem(s: SessionSteps, step: ToolStep): Item {
  const c = inContext(step, s.transcript);
  const metadata = {
    session_id: step.session_id,
    ...(s.session.external_key ? { session_key: s.session.external_key } : {}),
    tool_call_id: step.tool_call_id,
    tool_name: step.name,
    turn: step.turn,
    task_log_id: step.task_log_id,
  };
  const call = s.transcript.tool_calls[step.index]!;
  const result = step.result ?? '';
  return {
    id: toolStepId(step.session_id, step.tool_call_id),
    input: { tool: step.name, arguments: step.arguments },
    output: result,
    expected: null,
    metadata,
    raw: metadata,
    session: {
      conversation: c.conversation,
      trajectory: trajectoryText({ tool_calls: s.transcript.tool_calls.slice(0, step.index + 1) }),
      final_output: result,
      first_input: s.transcript.turns[0]?.input.find((m) => m.role === 'user')?.content ?? '',
      turns: c.turns,
      tool_calls: [call],
      tool_step: {
        session_id: step.session_id,
        tool_call_id: step.tool_call_id,
        name: step.name,
        arguments: step.arguments,
        result: step.result,
        turn: step.turn,
        index: step.index,
        task_log_id: step.task_log_id,
      },
    },
  };
}

/**
 * A container's tool steps: one position per tool call of its sessions (sessions oldest first, each
 * session's calls in order), so that a single step (a tool's name, arguments, result, and the
 * conversation before it) is scored. The filter is the sessions kind's (since, until, model, errors,
 * min_turns, max_turns), with `sessions` (ids) and `tools` (names) to pick steps; `until` defaults to the
 * run's creation. Judges read `{{tool_step.*}}` and `{{conversation}}` (what came before the call).
 */
export const toolStepsSource: SourceKind = {
  type: TYPE,
  request: {
    fields: ['container'],
    optional: ['filter'],
    resolve: resolveFilteredContainer(TYPE),
    issues: (name, body) =>
      isObject(body.filter) && Array.isArray(body.filter.tools) && body.filter.tools.length === 0
        ? [{ loc: ['body', name, 'filter', 'tools'], msg: 'Name at least one tool', type: 'too_short' }]
        : [],
  },
  reads: [{ permission: CONTENT_PERMISSION.session, what: "a container's sessions" }],
  recorded: true,
  // A step is no reference for itself: the same steps as ground truth give scorers none.
  selfIsNoReference: true,
  async count(db, side) {
    let n = 0;
    for (const s of await sideSessions(db, side)) n += s.known ?? (await s.read()).steps.length;
    return n;
  },
  async read(db, side, range: Range) {
    const items: Item[] = [];
    if (range.end <= range.start) return items;
    let at = 0;
    for (const session of await sideSessions(db, side)) {
      // A session wholly before the range, by a count known already, is not read again.
      if (session.known !== null && at + session.known <= range.start) {
        at += session.known;
        continue;
      }
      const s = await session.read();
      if (at + s.steps.length <= range.start) {
        at += s.steps.length;
        continue;
      }
      for (const step of s.steps) {
        if (at >= range.start && at < range.end) items.push(stepItem(s, step));
        at += 1;
      }
      if (at >= range.end) break;
    }
    return items;
  },
  view: refView('container', TYPE),
  itemPage: 'sessions',
};
