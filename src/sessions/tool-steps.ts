import type { ConversationEvent } from '../capture/sessions/canonical.js';
import {
  conversationText,
  messagesOf,
  type Transcript,
  type TranscriptMessage,
  type TranscriptToolCall,
  type Turn,
} from './transcript.js';

/**
 * A tool step: one tool call of a session (its name, arguments and result) with the conversation up to
 * it. A step is named by its session and its call's id; as an item (of a `tool_steps` run, of an
 * annotation queue) its id is `<session id>#<tool call id>` (a session id never holds `#`).
 */
export interface ToolStep {
  session_id: string;
  tool_call_id: string;
  name: string;
  arguments: unknown;
  /** What the tool returned, as a later call of the session sent it; null if none did. */
  result: string | null;
  /** The turn (0-based) whose answer made the call, and that turn's task log. */
  turn: number;
  task_log_id: string;
  /** The step's place among the session's tool calls (0-based). */
  index: number;
}

/** A step with what came before it: the conversation up to the call (the call itself left out). */
export interface ToolStepInContext extends ToolStep {
  /** The messages before the call, as a judge's `{{conversation}}` reads them. */
  context: TranscriptMessage[];
  /** The same conversation as text, one line per message. */
  conversation: string;
  /** The turns up to the step's, the step's own included. */
  turns: Turn[];
}

/** The item id of a tool step. */
export const toolStepId = (sessionId: string, toolCallId: string): string => `${sessionId}#${toolCallId}`;

/** The session and tool call an item id names, or null when it names no step. */
export function parseToolStepId(id: string): { session: string; toolCallId: string } | null {
  const at = id.indexOf('#');
  if (at <= 0 || at === id.length - 1) return null;
  return { session: id.slice(0, at), toolCallId: id.slice(at + 1) };
}

/** A session's tool steps in order: its tool calls that have an id (a call without one cannot be named). */
export function stepsOf(sessionId: string, t: Transcript): ToolStep[] {
  const steps: ToolStep[] = [];
  t.tool_calls.forEach((c: TranscriptToolCall, index) => {
    if (c.id === '') return;
    const turn = t.turns.find((x) => x.index === c.turn);
    steps.push({
      session_id: sessionId,
      tool_call_id: c.id,
      name: c.name,
      arguments: c.arguments,
      result: c.result,
      turn: c.turn,
      task_log_id: turn?.task_log_id ?? '',
      index,
    });
  });
  return steps;
}

/** The events before a call's first appearance in the conversation (all of them when it never appears). */
function eventsBefore(events: readonly ConversationEvent[], toolCallId: string): ConversationEvent[] {
  const at = events.findIndex((e) => e.kind === 'call' && e.id === toolCallId);
  return at < 0 ? [...events] : events.slice(0, at);
}

/** A step with the conversation up to it. */
export function inContext(step: ToolStep, t: Transcript): ToolStepInContext {
  const before = eventsBefore(t.events, step.tool_call_id);
  return {
    ...step,
    context: messagesOf(before),
    conversation: conversationText({ events: before }),
    turns: t.turns.filter((x) => x.index <= step.turn),
  };
}
