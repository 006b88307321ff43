import { isObject, type JsonObject, parseJson } from '../shared/json.js';
import { readUsage } from './providers/openai-compatible.js';
import type { AssistantMessage, ChatCompletion, FinishReason, ToolCall } from './providers/types.js';
import type { Usage } from './types.js';

interface ChoiceState {
  content: string;
  tools: ToolCall[];
  finish: FinishReason | null;
}

function applyToolDeltas(state: ChoiceState, deltas: unknown[]): void {
  for (const delta of deltas) {
    if (!isObject(delta)) continue;
    const index = typeof delta.index === 'number' ? delta.index : state.tools.length;
    let call = state.tools[index];
    if (!call) {
      call = { id: '', type: 'function', function: { name: '', arguments: '' } };
      state.tools[index] = call;
    }
    if (typeof delta.id === 'string') call.id = delta.id;
    const fn = isObject(delta.function) ? delta.function : {};
    if (typeof fn.name === 'string') call.function.name += fn.name;
    if (typeof fn.arguments === 'string') call.function.arguments += fn.arguments;
  }
}

const DELTA_CONTENT = '"delta":{"content":';
/** Text chunks tried as the form (a stream whose text chunks are not written compactly gives up after these). */
const FORM_TRIES = 3;

/**
 * A text chunk (one choice whose delta is its content alone, nothing else new) as written: the text
 * before and after its content string. A chunk that is this text with another JSON string in between
 * means the same with that content: replacing one string token by another keeps the document's
 * structure, so such chunks need no parse beyond their string's.
 */
interface TextForm {
  head: string;
  tail: string;
  index: number;
}

interface TextChunk {
  content: string;
  index: number;
}

/** What a text chunk (one choice, a delta of its content alone, nothing else new) says, else null. */
function textChunkOf(chunk: JsonObject): TextChunk | null {
  if (chunk.usage != null || !Array.isArray(chunk.choices) || chunk.choices.length !== 1) return null;
  const choice: unknown = chunk.choices[0];
  if (!isObject(choice) || choice.finish_reason != null || !isObject(choice.delta)) return null;
  const content = choice.delta.content;
  if (typeof content !== 'string' || Object.keys(choice.delta).length !== 1) return null;
  return { content, index: typeof choice.index === 'number' ? choice.index : 0 };
}

/**
 * The form of a text chunk, from its compact JSON text (where the content string is known to be), or
 * null when the chunk as written is not that text around its own content string.
 */
function textFormOf(payload: string, chunk: JsonObject, text: TextChunk): TextForm | null {
  const compact = JSON.stringify(chunk);
  // Compactly, the content is written `"delta":{"content":<string>}`: that must be there exactly once.
  const needle = `${DELTA_CONTENT}${JSON.stringify(text.content)}}`;
  const at = compact.indexOf(needle);
  if (at === -1 || compact.indexOf(needle, at + 1) !== -1) return null;
  const form: TextForm = {
    head: compact.slice(0, at + DELTA_CONTENT.length),
    tail: compact.slice(at + needle.length - 1),
    index: text.index,
  };
  return textOf(form, payload) === text.content ? form : null;
}

/** Characters a JSON string cannot hold as they are (escapes, the quote, controls). */
// biome-ignore lint/suspicious/noControlCharactersInRegex: the control characters are what it looks for
const NOT_PLAIN = /["\\\u0000-\u001f]/;

/** The content of a chunk that is the form's text with another string, else null. */
function textOf(form: TextForm, payload: string): string | null {
  const start = form.head.length;
  const end = payload.length - form.tail.length;
  // Slices compared whole: quicker than startsWith on long prefixes.
  if (end - start < 2 || payload.slice(0, start) !== form.head || payload.slice(end) !== form.tail)
    return null;
  const literal = payload.slice(start, end);
  if (literal.charCodeAt(0) === 34 && literal.charCodeAt(literal.length - 1) === 34) {
    // A string without escapes (the usual case) is its own text.
    const inner = literal.slice(1, -1);
    if (!NOT_PLAIN.test(inner)) return inner;
  }
  try {
    // Else it must be one string token and nothing else (a parse error or another value otherwise).
    const value: unknown = JSON.parse(literal);
    return typeof value === 'string' ? value : null;
  } catch {
    return null;
  }
}

/**
 * The chat completion a stream amounts to, from its chunk payloads (for the task log and for callers
 * of the plain-function layer). Unreadable chunks are skipped. Text chunks shaped like an earlier one
 * (the usual case: only the text changes from chunk to chunk) are read without a parse.
 */
export function assembleCompletion(payloads: readonly string[], model: string): ChatCompletion {
  const choices = new Map<number, ChoiceState>();
  const stateOf = (index: number) => {
    let state = choices.get(index);
    if (!state) {
      state = { content: '', tools: [], finish: null };
      choices.set(index, state);
    }
    return state;
  };
  let id = '';
  let created = Math.floor(Date.now() / 1000);
  let served = model;
  let usage: Usage | null = null;
  let form: TextForm | null = null;
  let tries = 0;
  for (const payload of payloads) {
    if (form !== null) {
      const text = textOf(form, payload);
      if (text !== null) {
        stateOf(form.index).content += text;
        continue;
      }
    }
    const chunk = parseJson<unknown>(payload, null);
    if (!isObject(chunk)) continue;
    if (id === '' && typeof chunk.id === 'string') {
      id = chunk.id;
      if (typeof chunk.created === 'number') created = chunk.created;
      if (typeof chunk.model === 'string') served = chunk.model;
    }
    usage = readUsage(chunk.usage) ?? usage;
    if (!Array.isArray(chunk.choices)) continue;
    for (const choice of chunk.choices as unknown[]) {
      if (!isObject(choice)) continue;
      const state = stateOf(typeof choice.index === 'number' ? choice.index : 0);
      const delta = isObject(choice.delta) ? choice.delta : {};
      if (typeof delta.content === 'string') state.content += delta.content;
      if (Array.isArray(delta.tool_calls)) applyToolDeltas(state, delta.tool_calls);
      if (typeof choice.finish_reason === 'string') state.finish = choice.finish_reason as FinishReason;
    }
    if (form === null && tries < FORM_TRIES) {
      const text = textChunkOf(chunk);
      if (text !== null) {
        tries++;
        form = textFormOf(payload, chunk, text);
      }
    }
  }
  const ordered = [...choices.entries()].sort((a, b) => a[0] - b[0]);
  return {
    id,
    object: 'chat.completion',
    created,
    model: served,
    choices: ordered.map(([index, state]) => {
      const tools = state.tools.filter(Boolean);
      // As in non-streamed answers: a message made only of tool calls has null content.
      const message: AssistantMessage = {
        role: 'assistant',
        content: state.content !== '' || tools.length === 0 ? state.content : null,
        refusal: null,
      };
      if (tools.length > 0) message.tool_calls = tools;
      return { index, message, finish_reason: state.finish, logprobs: null };
    }),
    usage,
  };
}
