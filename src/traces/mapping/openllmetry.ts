import {
  ATTR_GEN_AI_COMPLETION,
  ATTR_GEN_AI_PROMPT,
  ATTR_LLM_REQUEST_TYPE,
  ATTR_TRACELOOP_SPAN_KIND,
} from '../../shared/genai-attributes.js';
import { genAiFacts } from './genai.js';
import { callSite, firstStr, indexed, message, str, toolCall } from './read.js';
import type {
  Attributes,
  CallContent,
  ChatMessage,
  ContentReader,
  Convention,
  SpanView,
  ToolCall,
} from './types.js';

/**
 * OpenLLMetry's (Traceloop) flat form: `gen_ai.prompt.{i}.role|content|tool_call_id`,
 * `gen_ai.prompt.{i}.tool_calls.{j}.id|name|arguments`, `gen_ai.completion.{i}.*` likewise, with
 * `llm.request.type` and `llm.usage.*`; its workflow spans say `traceloop.span.kind`. (Its releases since
 * 0.2x write the GenAI ≥ 1.37 attributes instead, which the GenAI convention reads.)
 */

function toolCallsOf(span: SpanView, m: Attributes, site: string): ToolCall[] {
  return indexed(m, 'tool_calls').map((c, j) =>
    toolCall(str(c.id), str(c.name), c.arguments, callSite(span, site, j)),
  );
}

function messagesOf(span: SpanView, prefix: string): ChatMessage[] | null {
  const list = indexed(span.attributes, prefix);
  if (list.length === 0) return null;
  return list.map((m, i) =>
    message(
      str(m.role) ?? 'user',
      str(m.content),
      toolCallsOf(span, m, `${prefix}.${i}`),
      str(m.tool_call_id),
    ),
  );
}

function read(span: SpanView): CallContent {
  const outputs = messagesOf(span, ATTR_GEN_AI_COMPLETION);
  const first = outputs?.[0];
  return {
    input: messagesOf(span, ATTR_GEN_AI_PROMPT),
    output: outputs === null ? null : { text: first?.content ?? null, toolCalls: first?.tool_calls ?? [] },
  };
}

export const openLlmetryContent: ContentReader = { name: 'openllmetry', priority: 30, read };

export const openLlmetry: Convention = {
  name: 'openllmetry',
  priority: 30,
  applies: (span) =>
    span.attributes[`${ATTR_GEN_AI_PROMPT}.0.role`] !== undefined ||
    span.attributes[ATTR_LLM_REQUEST_TYPE] !== undefined,
  operation(span) {
    const a = span.attributes;
    const named = firstStr(a, ATTR_LLM_REQUEST_TYPE);
    if (named !== null) return named;
    const kind = firstStr(a, ATTR_TRACELOOP_SPAN_KIND);
    if (kind === 'tool') return 'execute_tool';
    if (kind === 'agent') return 'invoke_agent';
    return kind;
  },
  map: (span, context) => genAiFacts('openllmetry', span, context),
};
