import { answerEvents, type ConversationEvent, inputEvents } from '../capture/sessions/canonical.js';

/** One task log of a session, as the transcript reads it. */
export interface SessionLog {
  id: string;
  model: string;
  input: unknown;
  response: unknown;
  output: string | null;
  status: 'success' | 'error';
  error: unknown;
  usage: { prompt_tokens?: number; completion_tokens?: number; total_tokens?: number } | null;
  cost: number;
  latency_ms: number;
  created_at: string;
}

export interface TranscriptMessage {
  role: 'system' | 'user' | 'tool';
  content: string;
  tool_call_id?: string;
}

export interface TranscriptToolCall {
  id: string;
  name: string;
  /** The arguments as the model gave them (parsed JSON where they are JSON). */
  arguments: unknown;
  /** What the tool returned, as a later call of the session sent it; null if none did. */
  result: string | null;
  /** The turn (0-based) whose answer made the call. */
  turn: number;
}

/** One call of the session: what was new in its input, and its answer. */
export interface Turn {
  index: number;
  task_log_id: string;
  model: string;
  created_at: string;
  status: 'success' | 'error';
  /** The messages this call added to the conversation: the user's, tool results, a system prompt. */
  input: TranscriptMessage[];
  output: { content: string | null; tool_calls: { id: string; name: string; arguments: unknown }[] };
  usage: SessionLog['usage'];
  cost: number;
  latency_ms: number;
  error: unknown;
}

export interface Transcript {
  turns: Turn[];
  tool_calls: TranscriptToolCall[];
  /** The whole conversation as events: every call's new input, then its answer. */
  events: ConversationEvent[];
}

const parseArgs = (text: string): unknown => {
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
};

const sameEvent = (a: ConversationEvent | undefined, b: ConversationEvent | undefined) =>
  a !== undefined && b !== undefined && JSON.stringify(a) === JSON.stringify(b);

/**
 * A session's calls (in order) as turns: each call's input is compared with the conversation so far,
 * and only what it adds is shown (the user's next message, tool results); a call that does not continue
 * the conversation (another branch) shows its whole input. `first`: the index of the first call given
 * (a page of a longer session, whose first call shows its whole input).
 */
export function transcriptOf(logs: SessionLog[], first = 0): Transcript {
  const turns: Turn[] = [];
  const toolCalls = new Map<string, TranscriptToolCall>();
  let soFar: ConversationEvent[] = [];
  const events: ConversationEvent[] = [];
  logs.forEach((log, i) => {
    const index = first + i;
    const input = inputEvents(log.input) ?? [];
    let start = 0;
    if (soFar.length <= input.length && soFar.every((e, i) => sameEvent(e, input[i]))) start = soFar.length;
    const added = input.slice(start);
    const answer = log.status === 'success' ? answerEvents(log.response) : [];
    const messages: TranscriptMessage[] = [];
    for (const e of added) {
      events.push(e);
      if (e.kind === 'system' || e.kind === 'user') messages.push({ role: e.kind, content: e.text });
      else if (e.kind === 'result') {
        messages.push({ role: 'tool', content: e.text, tool_call_id: e.id });
        const call = toolCalls.get(e.id);
        if (call && call.result === null) call.result = e.text;
      }
    }
    let content: string | null = null;
    const calls: Turn['output']['tool_calls'] = [];
    for (const e of answer) {
      events.push(e);
      if (e.kind === 'assistant') content = (content ?? '') + e.text;
      else if (e.kind === 'call') {
        const args = parseArgs(e.arguments);
        calls.push({ id: e.id, name: e.name, arguments: args });
        if (!toolCalls.has(e.id) || e.id === '') {
          toolCalls.set(e.id || `#${toolCalls.size}`, {
            id: e.id,
            name: e.name,
            arguments: args,
            result: null,
            turn: index,
          });
        }
      }
    }
    if (answer.length === 0 && log.output !== null && log.status === 'success') content = log.output;
    soFar = [...input, ...answer];
    turns.push({
      index,
      task_log_id: log.id,
      model: log.model,
      created_at: log.created_at,
      status: log.status,
      input: messages,
      output: { content, tool_calls: calls },
      usage: log.usage,
      cost: log.cost,
      latency_ms: log.latency_ms,
      error: log.error,
    });
  });
  return { turns, tool_calls: [...toolCalls.values()], events };
}

/** The conversation as text for a judge: one line per message, tool calls with their arguments. */
export function conversationText(t: Transcript): string {
  const lines: string[] = [];
  for (const e of t.events) {
    if (e.kind === 'system') lines.push(`system: ${e.text}`);
    else if (e.kind === 'user') lines.push(`user: ${e.text}`);
    else if (e.kind === 'assistant') lines.push(`assistant: ${e.text}`);
    else if (e.kind === 'call') lines.push(`assistant called ${e.name}(${e.arguments})`);
    else lines.push(`tool result: ${e.text}`);
  }
  return lines.join('\n');
}

/** The tool calls as text for a judge: one per line, with arguments and result. */
export function trajectoryText(t: Transcript): string {
  return t.tool_calls
    .map((c, i) => `${i + 1}. ${c.name}(${JSON.stringify(c.arguments)}) -> ${c.result ?? '(no result)'}`)
    .join('\n');
}
