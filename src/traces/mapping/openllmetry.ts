import { indexed, message, str, toolCall } from './read.js';
import type { Attributes, CallContent, ChatMessage, ToolCall } from './types.js';

/**
 * OpenLLMetry's (Traceloop) flat form: `gen_ai.prompt.{i}.role|content|tool_call_id`,
 * `gen_ai.prompt.{i}.tool_calls.{j}.id|name|arguments`, `gen_ai.completion.{i}.*` likewise.
 */

function toolCallsOf(m: Attributes): ToolCall[] {
  return indexed(m, 'tool_calls').map((c, i) => toolCall(str(c.id), str(c.name), c.arguments, i));
}

function messagesOf(a: Attributes, prefix: string): ChatMessage[] | null {
  const list = indexed(a, prefix);
  if (list.length === 0) return null;
  return list.map((m) => message(str(m.role) ?? 'user', str(m.content), toolCallsOf(m), str(m.tool_call_id)));
}

export function openLlmetryContent(a: Attributes): CallContent {
  const input = messagesOf(a, 'gen_ai.prompt');
  const outputs = messagesOf(a, 'gen_ai.completion');
  const first = outputs?.[0];
  return {
    input,
    output: outputs === null ? null : { text: first?.content ?? null, toolCalls: first?.tool_calls ?? [] },
  };
}
