import {
  ATTR_GEN_AI_COMPLETION,
  ATTR_GEN_AI_EVENT_CONTENT,
  ATTR_GEN_AI_PROMPT,
  EVENT_GEN_AI_ASSISTANT_MESSAGE,
  EVENT_GEN_AI_CHOICE,
  EVENT_GEN_AI_CONTENT_COMPLETION,
  EVENT_GEN_AI_CONTENT_PROMPT,
  EVENT_GEN_AI_SYSTEM_MESSAGE,
  EVENT_GEN_AI_TOOL_MESSAGE,
  EVENT_GEN_AI_USER_MESSAGE,
} from '../../shared/genai-attributes.js';
import { asObject, callSite, message, parsed, str, textOf, toolCall } from './read.js';
import type {
  Attributes,
  CallContent,
  ChatMessage,
  ContentReader,
  JsonValue,
  SpanView,
  ToolCall,
} from './types.js';

/**
 * GenAI semantic conventions ≤ 1.36: the messages as span events, `gen_ai.system.message`,
 * `gen_ai.user.message`, `gen_ai.assistant.message`, `gen_ai.tool.message` and `gen_ai.choice`, their
 * body flattened into attributes (`content`, `tool_calls`, `id`, `message`), and the older
 * `gen_ai.content.prompt` / `gen_ai.content.completion` events with `gen_ai.prompt` / `gen_ai.completion`.
 */

const ROLES: Record<string, string> = {
  [EVENT_GEN_AI_SYSTEM_MESSAGE]: 'system',
  [EVENT_GEN_AI_USER_MESSAGE]: 'user',
  [EVENT_GEN_AI_ASSISTANT_MESSAGE]: 'assistant',
  [EVENT_GEN_AI_TOOL_MESSAGE]: 'tool',
};

function toolCallsOf(v: JsonValue | undefined, site: string): ToolCall[] {
  const list = parsed(v);
  if (!Array.isArray(list)) return [];
  return list.flatMap((raw, i) => {
    const c = asObject(raw);
    if (!c) return [];
    const fn = asObject(c.function) ?? c;
    return [toolCall(str(c.id), str(fn.name), fn.arguments ?? fn.args, `${site}/${i}`)];
  });
}

/** The event's message body: flattened attributes, or a JSON `message` / `gen_ai.event.content`. */
function bodyOf(a: Attributes): Attributes {
  const nested = asObject(parsed(a.message)) ?? asObject(parsed(a[ATTR_GEN_AI_EVENT_CONTENT]));
  return nested ? { ...a, ...nested } : a;
}

function chatMessages(v: JsonValue | undefined, site: string): ChatMessage[] | null {
  const list = parsed(v);
  if (!Array.isArray(list)) return null;
  return list.flatMap((raw, i) => {
    const m = asObject(raw);
    if (!m) return [];
    const calls = toolCallsOf(m.tool_calls, `${site}/${i}`);
    return [message(str(m.role) ?? 'user', textOf(m.content), calls, str(m.tool_call_id))];
  });
}

/** The content of a span in the event form, or nulls where it carries none. */
function read(span: SpanView): CallContent {
  let input: ChatMessage[] | null = null;
  let output: CallContent['output'] = null;
  for (const [e, event] of span.events.entries()) {
    // The event's position names its tool calls that have no id.
    const site = callSite(span, 'event', e);
    const role = ROLES[event.name];
    if (role !== undefined) {
      const body = bodyOf(event.attributes);
      input ??= [];
      input.push(
        message(
          str(body.role) ?? role,
          textOf(body.content),
          toolCallsOf(body.tool_calls, site),
          str(body.id),
        ),
      );
    } else if (event.name === EVENT_GEN_AI_CHOICE && output === null) {
      const body = bodyOf(event.attributes);
      output = { text: textOf(body.content), toolCalls: toolCallsOf(body.tool_calls, site) };
    } else if (event.name === EVENT_GEN_AI_CONTENT_PROMPT) {
      input = chatMessages(event.attributes[ATTR_GEN_AI_PROMPT], site) ?? input;
    } else if (event.name === EVENT_GEN_AI_CONTENT_COMPLETION && output === null) {
      const first = chatMessages(event.attributes[ATTR_GEN_AI_COMPLETION], site)?.[0];
      if (first) output = { text: first.content, toolCalls: first.tool_calls ?? [] };
    }
  }
  return { input, output };
}

export const genAiEventContent: ContentReader = { name: 'genai-events', priority: 20, read };
