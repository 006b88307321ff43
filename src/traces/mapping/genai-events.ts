import { asObject, message, parsed, str, textOf, toolCall } from './read.js';
import type { Attributes, CallContent, ChatMessage, JsonValue, SpanView, ToolCall } from './types.js';

/**
 * GenAI semantic conventions ≤ 1.36: the messages as span events, `gen_ai.system.message`,
 * `gen_ai.user.message`, `gen_ai.assistant.message`, `gen_ai.tool.message` and `gen_ai.choice`, their
 * body flattened into attributes (`content`, `tool_calls`, `id`, `message`), and the older
 * `gen_ai.content.prompt` / `gen_ai.content.completion` events with `gen_ai.prompt` / `gen_ai.completion`.
 */

const ROLES: Record<string, string> = {
  'gen_ai.system.message': 'system',
  'gen_ai.user.message': 'user',
  'gen_ai.assistant.message': 'assistant',
  'gen_ai.tool.message': 'tool',
};

function toolCallsOf(v: JsonValue | undefined): ToolCall[] {
  const list = parsed(v);
  if (!Array.isArray(list)) return [];
  return list.flatMap((raw, i) => {
    const c = asObject(raw);
    if (!c) return [];
    const fn = asObject(c.function) ?? c;
    return [toolCall(str(c.id), str(fn.name), fn.arguments ?? fn.args, i)];
  });
}

/** The event's message body: flattened attributes, or a JSON `message` / `gen_ai.event.content`. */
function bodyOf(a: Attributes): Attributes {
  const nested = asObject(parsed(a.message)) ?? asObject(parsed(a['gen_ai.event.content']));
  return nested ? { ...a, ...nested } : a;
}

function chatMessages(v: JsonValue | undefined): ChatMessage[] | null {
  const list = parsed(v);
  if (!Array.isArray(list)) return null;
  return list.flatMap((raw) => {
    const m = asObject(raw);
    if (!m) return [];
    return [
      message(str(m.role) ?? 'user', textOf(m.content), toolCallsOf(m.tool_calls), str(m.tool_call_id)),
    ];
  });
}

/** The content of a span in the event form, or nulls where it carries none. */
export function genAiEventContent(span: SpanView): CallContent {
  let input: ChatMessage[] | null = null;
  let output: CallContent['output'] = null;
  for (const event of span.events) {
    const role = ROLES[event.name];
    if (role !== undefined) {
      const body = bodyOf(event.attributes);
      input ??= [];
      input.push(
        message(str(body.role) ?? role, textOf(body.content), toolCallsOf(body.tool_calls), str(body.id)),
      );
    } else if (event.name === 'gen_ai.choice' && output === null) {
      const body = bodyOf(event.attributes);
      output = { text: textOf(body.content), toolCalls: toolCallsOf(body.tool_calls) };
    } else if (event.name === 'gen_ai.content.prompt') {
      input = chatMessages(event.attributes['gen_ai.prompt']) ?? input;
    } else if (event.name === 'gen_ai.content.completion' && output === null) {
      const first = chatMessages(event.attributes['gen_ai.completion'])?.[0];
      if (first) output = { text: first.content, toolCalls: first.tool_calls ?? [] };
    }
  }
  return { input, output };
}
