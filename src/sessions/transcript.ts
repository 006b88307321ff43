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
  role: 'system' | 'user' | 'assistant' | 'tool';
  /** The text ('' for an assistant message that only called tools). */
  content: string;
  tool_call_id?: string;
  /**
   * An assistant message's tool calls: only in a turn that shows a conversation the session did not
   * record (its first call, or a page's), so that no tool result is shown without its call.
   */
  tool_calls?: { id: string; name: string; arguments: unknown }[];
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

/**
 * Where the agent changed: a call that continues the conversation under another system prompt (an
 * `@openai/agents` handoff, whose next agent has its own instructions).
 */
export interface Handoff {
  /** The agent before, where an earlier handoff of the session named it; else null. */
  from: string | null;
  /** The agent after: as the transfer's result names it (`{"assistant": …}`) or its tool `transfer_to_<name>`. */
  to: string | null;
  /** The tool call of the previous turn that made the handoff (its result is in this turn); null if none. */
  tool: string | null;
  tool_call_id: string | null;
}

/** One call of the session: what was new in its input, and its answer. */
export interface Turn {
  index: number;
  task_log_id: string;
  model: string;
  created_at: string;
  status: 'success' | 'error';
  /** The messages this call added to the conversation: the user's, tool results, a changed system prompt. */
  input: TranscriptMessage[];
  output: { content: string | null; tool_calls: { id: string; name: string; arguments: unknown }[] };
  /** Set on the turn where the agent changed (its system prompt did); null elsewhere. */
  handoff: Handoff | null;
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

const sameEvents = (a: ConversationEvent[], b: ConversationEvent[]) =>
  a.length === b.length && a.every((e, i) => sameEvent(e, b[i]));

/** What a call's input adds to the conversation so far (the previous call's input and answer). */
interface NewPart {
  added: ConversationEvent[];
  /** Whether the input continues the conversation so far (its events past the system prompt repeat it). */
  continued: boolean;
  /** Whether it does so under another system prompt (the agent changed). */
  systemChanged: boolean;
}

/**
 * Compares a call's input with the conversation so far, system events set aside: the input continues
 * it when its other events start with the conversation's. What it adds is what follows, and its system
 * prompt where that changed (a handoff replaces it). An input that does not continue adds all of it.
 */
export function newPart(soFar: ConversationEvent[], input: ConversationEvent[]): NewPart {
  const said = soFar.filter((e) => e.kind !== 'system');
  let matched = 0;
  let cut = 0;
  for (let i = 0; i < input.length && matched < said.length; i++) {
    const e = input[i]!;
    if (e.kind === 'system') continue;
    if (!sameEvent(e, said[matched])) return { added: input, continued: false, systemChanged: false };
    matched += 1;
    cut = i + 1;
  }
  if (matched < said.length) return { added: input, continued: false, systemChanged: false };
  const systemBefore = input.slice(0, cut).filter((e) => e.kind === 'system');
  const systemChanged =
    soFar.length > 0 &&
    !sameEvents(
      systemBefore,
      soFar.filter((e) => e.kind === 'system'),
    );
  return {
    added: [...(systemChanged ? systemBefore : []), ...input.slice(cut)],
    continued: true,
    systemChanged,
  };
}

/** The agent a transfer names: its result's `assistant` (as `@openai/agents` answers) or `transfer_to_<name>`. */
function agentNamed(name: string, result: string): string | null {
  try {
    const parsed: unknown = JSON.parse(result);
    if (parsed && typeof parsed === 'object' && 'assistant' in parsed && typeof parsed.assistant === 'string')
      return parsed.assistant;
  } catch {
    // not JSON: the tool's name may still say
  }
  const m = /^transfer_to_(.+)$/.exec(name);
  return m ? m[1]! : null;
}

/** The handoff of a turn whose system prompt changed: the previous answer's call whose result it brings. */
function handoffOf(
  previous: Turn['output']['tool_calls'],
  added: ConversationEvent[],
  from: string | null,
): Handoff {
  const results = new Map<string, string>();
  for (const e of added) if (e.kind === 'result') results.set(e.id, e.text);
  const answered = previous.filter((c) => results.has(c.id));
  const link =
    answered.find((c) => agentNamed(c.name, results.get(c.id)!) !== null) ?? answered[answered.length - 1];
  if (!link) return { from, to: null, tool: null, tool_call_id: null };
  return { from, to: agentNamed(link.name, results.get(link.id)!), tool: link.name, tool_call_id: link.id };
}

/** Added events as messages: an assistant's text and calls (a history not recorded) as one message. */
export function messagesOf(added: ConversationEvent[]): TranscriptMessage[] {
  const messages: TranscriptMessage[] = [];
  for (const e of added) {
    const last = messages[messages.length - 1];
    if (e.kind === 'system' || e.kind === 'user') messages.push({ role: e.kind, content: e.text });
    else if (e.kind === 'result') messages.push({ role: 'tool', content: e.text, tool_call_id: e.id });
    else if (e.kind === 'assistant') messages.push({ role: 'assistant', content: e.text, tool_calls: [] });
    else {
      const call = { id: e.id, name: e.name, arguments: parseArgs(e.arguments) };
      if (last?.role === 'assistant' && last.tool_calls) last.tool_calls.push(call);
      else messages.push({ role: 'assistant', content: '', tool_calls: [call] });
    }
  }
  for (const m of messages) if (m.tool_calls?.length === 0) delete m.tool_calls;
  return messages;
}

/**
 * A session's calls (in order) as turns: each call's input is compared with the conversation so far,
 * and only what it adds is shown (the user's next message, tool results, a system prompt that changed
 * at a handoff); a call that does not continue the conversation (another branch) shows its whole input,
 * earlier answers and tool calls included. `first`: the index of the first call given (a page of a
 * longer session, whose first call shows its whole input).
 */
export function transcriptOf(logs: SessionLog[], first = 0): Transcript {
  const turns: Turn[] = [];
  const toolCalls = new Map<string, TranscriptToolCall>();
  let soFar: ConversationEvent[] = [];
  let agent: string | null = null;
  const events: ConversationEvent[] = [];
  logs.forEach((log, i) => {
    const index = first + i;
    const input = inputEvents(log.input) ?? [];
    const part = newPart(soFar, input);
    const answer = log.status === 'success' ? answerEvents(log.response) : [];
    for (const e of part.added) {
      events.push(e);
      const call = e.kind === 'result' ? toolCalls.get(e.id) : undefined;
      if (call && e.kind === 'result' && call.result === null) call.result = e.text;
    }
    const previous = turns[turns.length - 1];
    let handoff: Handoff | null = null;
    if (part.continued && part.systemChanged && previous) {
      handoff = handoffOf(previous.output.tool_calls, part.added, agent);
      agent = handoff.to;
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
      input: messagesOf(part.added),
      output: { content, tool_calls: calls },
      handoff,
      usage: log.usage,
      cost: log.cost,
      latency_ms: log.latency_ms,
      error: log.error,
    });
  });
  return { turns, tool_calls: [...toolCalls.values()], events };
}

/** The conversation as text for a judge: one line per message, tool calls with their arguments. */
export function conversationText(t: Pick<Transcript, 'events'>): string {
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
export function trajectoryText(t: Pick<Transcript, 'tool_calls'>): string {
  return t.tool_calls
    .map((c, i) => `${i + 1}. ${c.name}(${JSON.stringify(c.arguments)}) -> ${c.result ?? '(no result)'}`)
    .join('\n');
}
