import {
  ATTR_GEN_AI_INPUT_MESSAGES,
  ATTR_GEN_AI_OUTPUT_MESSAGES,
  ATTR_GEN_AI_SYSTEM_INSTRUCTIONS,
} from '../../shared/genai-attributes.js';
import { asObject, callSite, message, parsed, str, toolCall } from './read.js';
import type { CallContent, ChatMessage, ContentReader, JsonValue, SpanView, ToolCall } from './types.js';

/**
 * GenAI semantic conventions ≥ 1.37: the messages as span attributes of typed parts
 * (`gen_ai.input.messages`, `gen_ai.output.messages`, `gen_ai.system_instructions`), each part `text`,
 * `tool_call` or `tool_call_response`.
 */

interface Parts {
  text: string | null;
  toolCalls: ToolCall[];
  responses: { id: string | null; text: string }[];
}

function partsOf(v: JsonValue | undefined, site: string): Parts {
  const out: Parts = { text: null, toolCalls: [], responses: [] };
  const list = parsed(v);
  if (typeof list === 'string') return { ...out, text: list };
  if (!Array.isArray(list)) return out;
  const texts: string[] = [];
  list.forEach((raw, i) => {
    const part = asObject(raw);
    if (!part) return;
    const type = str(part.type);
    if (type === 'text' || type === 'thinking' || type === null) {
      const t = str(part.content ?? part.text);
      if (t !== null && type !== 'thinking') texts.push(t);
    } else if (type === 'tool_call') {
      out.toolCalls.push(toolCall(str(part.id), str(part.name), part.arguments, `${site}/${i}`));
    } else if (type === 'tool_call_response') {
      const r = part.response ?? part.result ?? null;
      out.responses.push({ id: str(part.id), text: typeof r === 'string' ? r : JSON.stringify(r) });
    }
  });
  if (texts.length > 0) out.text = texts.join('');
  return out;
}

function messagesOf(span: SpanView, key: string): ChatMessage[] {
  const list = parsed(span.attributes[key]);
  if (!Array.isArray(list)) return [];
  const out: ChatMessage[] = [];
  for (const [i, raw] of list.entries()) {
    const m = asObject(raw);
    if (!m) continue;
    const role = str(m.role) ?? 'user';
    const parts = partsOf(m.parts ?? m.content, callSite(span, key, i));
    if (parts.responses.length > 0) {
      for (const r of parts.responses) out.push(message('tool', r.text, [], r.id));
      continue;
    }
    out.push(message(role, parts.text, parts.toolCalls));
  }
  return out;
}

/** The content of a span in the ≥ 1.37 form, or nulls where it carries none. */
function read(span: SpanView): CallContent {
  const a = span.attributes;
  const hasInput =
    a[ATTR_GEN_AI_INPUT_MESSAGES] !== undefined || a[ATTR_GEN_AI_SYSTEM_INSTRUCTIONS] !== undefined;
  let input: ChatMessage[] | null = null;
  if (hasInput) {
    const system = partsOf(a[ATTR_GEN_AI_SYSTEM_INSTRUCTIONS], callSite(span, 'system')).text;
    input = [
      ...(system !== null ? [message('system', system)] : []),
      ...messagesOf(span, ATTR_GEN_AI_INPUT_MESSAGES),
    ];
  }
  let output: CallContent['output'] = null;
  if (a[ATTR_GEN_AI_OUTPUT_MESSAGES] !== undefined) {
    const first = messagesOf(span, ATTR_GEN_AI_OUTPUT_MESSAGES)[0];
    output = { text: first?.content ?? null, toolCalls: first?.tool_calls ?? [] };
  }
  return { input, output };
}

export const genAiAttributeContent: ContentReader = { name: 'genai-attributes', priority: 10, read };
