import { createHash, type Hash } from 'node:crypto';
import { isObject, type JsonObject } from '../../shared/json.js';

/**
 * A conversation in one form whatever dialect carried it: chat messages, Responses output items and
 * Messages content blocks all become the same flat list of events, so that a call's input can be
 * compared with an earlier call's input and answer. Events keep what the conversation says (who said
 * what, which tool was called with which arguments, what it returned) and drop how it was written
 * (content as a string or as parts, tool calls grouped in one message or split over several, argument
 * JSON's spacing and key order).
 */
export type ConversationEvent =
  | { kind: 'system'; text: string }
  | { kind: 'user'; text: string }
  | { kind: 'assistant'; text: string }
  | { kind: 'call'; id: string; name: string; arguments: string }
  | { kind: 'result'; id: string; text: string };

/** JSON with object keys sorted, so that equal values give equal text. */
export function stableJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(stableJson).join(',')}]`;
  if (isObject(value)) {
    const keys = Object.keys(value).sort();
    return `{${keys
      .filter((k) => value[k] !== undefined)
      .map((k) => `${JSON.stringify(k)}:${stableJson(value[k])}`)
      .join(',')}}`;
  }
  return JSON.stringify(value ?? null);
}

/** Tool arguments as canonical JSON text (text that is not JSON is kept, trimmed). */
function argumentsText(args: unknown): string {
  if (typeof args !== 'string') return stableJson(args ?? {});
  try {
    return stableJson(JSON.parse(args));
  } catch {
    return args.trim();
  }
}

/** The text of a content value: a string, or the texts of its parts (other parts as canonical JSON). */
export function contentText(content: unknown): string {
  if (typeof content === 'string') return content;
  if (!Array.isArray(content)) return content === null || content === undefined ? '' : stableJson(content);
  let out = '';
  for (const part of content) {
    if (typeof part === 'string') out += part;
    else if (isObject(part) && typeof part.text === 'string') out += part.text;
    else if (isObject(part) && part.type === 'tool_result') continue;
    else if (isObject(part) && part.type === 'tool_use') continue;
    else out += stableJson(part);
  }
  return out;
}

function push(events: ConversationEvent[], event: ConversationEvent): void {
  // Consecutive assistant texts are one answer, however many parts or messages carried it.
  const last = events[events.length - 1];
  if (event.kind === 'assistant' && last?.kind === 'assistant') {
    last.text += event.text;
    return;
  }
  if ((event.kind === 'assistant' || event.kind === 'user' || event.kind === 'system') && event.text === '')
    return;
  events.push(event);
}

/** One chat message (or a Messages API message, whose tool use and results are content blocks). */
function messageEvents(events: ConversationEvent[], m: JsonObject): void {
  const role = m.role;
  if (role === 'tool') {
    push(events, { kind: 'result', id: String(m.tool_call_id ?? ''), text: contentText(m.content) });
    return;
  }
  if (role === 'function') {
    push(events, { kind: 'result', id: String(m.name ?? ''), text: contentText(m.content) });
    return;
  }
  if (role === 'assistant') {
    push(events, { kind: 'assistant', text: contentText(m.content) });
    if (Array.isArray(m.content)) {
      for (const block of m.content) {
        if (isObject(block) && block.type === 'tool_use') {
          push(events, {
            kind: 'call',
            id: String(block.id ?? ''),
            name: String(block.name ?? ''),
            arguments: argumentsText(block.input),
          });
        }
      }
    }
    if (Array.isArray(m.tool_calls)) {
      for (const call of m.tool_calls) {
        if (!isObject(call)) continue;
        const fn = isObject(call.function) ? call.function : {};
        push(events, {
          kind: 'call',
          id: String(call.id ?? ''),
          name: String(fn.name ?? ''),
          arguments: argumentsText(fn.arguments),
        });
      }
    }
    return;
  }
  if (Array.isArray(m.content)) {
    for (const block of m.content) {
      if (isObject(block) && block.type === 'tool_result') {
        push(events, {
          kind: 'result',
          id: String(block.tool_use_id ?? ''),
          text: contentText(block.content),
        });
      }
    }
  }
  push(events, {
    kind: role === 'system' || role === 'developer' ? 'system' : 'user',
    text: contentText(m.content),
  });
}

/** A call's input (chat messages, as every dialect's calls are recorded) as events; null: not a conversation. */
export function inputEvents(input: unknown): ConversationEvent[] | null {
  if (!Array.isArray(input)) return null;
  const events: ConversationEvent[] = [];
  for (const m of input) if (isObject(m)) messageEvents(events, m);
  return events;
}

/** One Responses output item. */
function outputItemEvents(events: ConversationEvent[], item: JsonObject): void {
  if (item.type === 'message') push(events, { kind: 'assistant', text: contentText(item.content) });
  else if (item.type === 'function_call') {
    push(events, {
      kind: 'call',
      id: String(item.call_id ?? item.id ?? ''),
      name: String(item.name ?? ''),
      arguments: argumentsText(item.arguments),
    });
  }
}

/**
 * A recorded answer as events: a chat completion (`choices`), a Responses response (`output` items) or a
 * Messages API message (`content` blocks). Empty when there is no answer (a failed call).
 */
export function answerEvents(response: unknown): ConversationEvent[] {
  const events: ConversationEvent[] = [];
  if (!isObject(response)) return events;
  if (Array.isArray(response.choices)) {
    const first = response.choices[0];
    if (isObject(first) && isObject(first.message))
      messageEvents(events, { ...first.message, role: 'assistant' });
  } else if (Array.isArray(response.output)) {
    for (const item of response.output) if (isObject(item)) outputItemEvents(events, item);
  } else if (Array.isArray(response.content)) {
    messageEvents(events, { role: 'assistant', content: response.content });
  }
  return events;
}

const eventText = (e: ConversationEvent): string => {
  switch (e.kind) {
    case 'call':
      return JSON.stringify(['c', e.id, e.name, e.arguments]);
    case 'result':
      return JSON.stringify(['r', e.id, e.text]);
    default:
      return JSON.stringify([e.kind[0], e.text]);
  }
};

const digestOf = (hash: Hash): string => hash.digest('base64url').slice(0, 32);

/** The hashes continuity works with, of one call. */
export interface ConversationHashes {
  /**
   * The input up to and including its last assistant event (the answer the call continues from); null
   * when the input holds no answer (a conversation's first call).
   */
  continues: string | null;
  /** The input and the call's own answer: what the next call of the conversation will continue from. */
  soFar: string | null;
  /**
   * *continues* over the conversation without its system events, where the answer the input continues
   * from is a tool call with an id (a handoff's transfer): the key that finds the conversation again when
   * the next agent's system prompt replaced the first one. Null otherwise.
   */
  handoffContinues: string | null;
  /** *so far* without system events, where the call's answer ends with a tool call with an id; else null. */
  handoffSoFar: string | null;
}

/** A tool call with an id: the only kind of answer a handoff's key is kept for (ids tell runs apart). */
const linksByCall = (e: ConversationEvent | undefined): boolean => e?.kind === 'call' && e.id !== '';

export function conversationHashes(
  input: ConversationEvent[],
  answer: ConversationEvent[],
): ConversationHashes {
  let last = -1;
  for (let i = input.length - 1; i >= 0; i--) {
    const kind = input[i]!.kind;
    if (kind === 'assistant' || kind === 'call') {
      last = i;
      break;
    }
  }
  const continuesByCall = linksByCall(input[last]);
  const soFarByCall = linksByCall(answer[answer.length - 1]);
  // One pass over the conversation: the hash of the prefix is copied where *continues* ends, and the
  // same hash goes on over the rest of the input and the answer for *so far*. The second hash skips
  // system events and is only kept where a tool call links the calls.
  const hash = createHash('sha256');
  const bare = continuesByCall || soFarByCall ? createHash('sha256') : null;
  let continues: string | null = null;
  let handoffContinues: string | null = null;
  for (let i = 0; i < input.length; i++) {
    const e = input[i]!;
    const text = eventText(e);
    hash.update(text).update('\n');
    if (bare && e.kind !== 'system') bare.update(text).update('\n');
    if (i === last) {
      continues = digestOf(hash.copy());
      if (bare && continuesByCall) handoffContinues = digestOf(bare.copy());
    }
  }
  if (answer.length === 0) return { continues, soFar: null, handoffContinues, handoffSoFar: null };
  for (const e of answer) {
    const text = eventText(e);
    hash.update(text).update('\n');
    if (bare && e.kind !== 'system') bare.update(text).update('\n');
  }
  return {
    continues,
    soFar: digestOf(hash),
    handoffContinues,
    handoffSoFar: bare && soFarByCall ? digestOf(bare) : null,
  };
}
