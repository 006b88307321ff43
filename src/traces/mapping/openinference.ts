import {
  ATTR_GEN_AI_REQUEST_MODEL,
  ATTR_LLM_INPUT_MESSAGES,
  ATTR_LLM_MODEL_NAME,
  ATTR_LLM_OUTPUT_MESSAGES,
  ATTR_LLM_PROVIDER,
  ATTR_LLM_SYSTEM,
  ATTR_LLM_TOKEN_COUNT_COMPLETION,
  ATTR_LLM_TOKEN_COUNT_PROMPT,
  ATTR_OPENINFERENCE_SPAN_KIND,
  OI_MESSAGE_CONTENT,
  OI_MESSAGE_CONTENT_TEXT,
  OI_MESSAGE_CONTENT_TYPE,
  OI_MESSAGE_CONTENTS,
  OI_MESSAGE_ROLE,
  OI_MESSAGE_TOOL_CALL_ID,
  OI_MESSAGE_TOOL_CALLS,
  OI_TOOL_CALL_FUNCTION_ARGUMENTS,
  OI_TOOL_CALL_FUNCTION_NAME,
  OI_TOOL_CALL_ID,
} from '../../shared/genai-attributes.js';
import { callSite, firstNum, firstStr, indexed, message, str, TEXT_PART_TYPES, toolCall } from './read.js';
import type { Attributes, CallContent, ChatMessage, Convention, SpanView, ToolCall } from './types.js';

/**
 * OpenInference (Arize): `openinference.span.kind` LLM, `llm.model_name`, `llm.provider`/`llm.system`,
 * `llm.input_messages.{i}.message.*` and `llm.output_messages.{i}.message.*` (role, content or
 * `contents.{j}.message_content.text`, `tool_calls.{j}.tool_call.*`, `tool_call_id`),
 * `llm.token_count.{prompt,completion}`. Its Responses API instrumentation records each output item as
 * a message of its own (a function call each, the text as `output_text` parts).
 */

function toolCallsOf(span: SpanView, m: Attributes, site: string): ToolCall[] {
  return indexed(m, OI_MESSAGE_TOOL_CALLS).map((c, j) =>
    toolCall(
      str(c[OI_TOOL_CALL_ID]),
      str(c[OI_TOOL_CALL_FUNCTION_NAME]),
      c[OI_TOOL_CALL_FUNCTION_ARGUMENTS],
      callSite(span, site, j),
    ),
  );
}

function contentOf(m: Attributes): string | null {
  const direct = str(m[OI_MESSAGE_CONTENT]);
  if (direct !== null) return direct;
  const parts = indexed(m, OI_MESSAGE_CONTENTS)
    .filter((p) => TEXT_PART_TYPES.has(str(p[OI_MESSAGE_CONTENT_TYPE]) ?? 'text'))
    .map((p) => str(p[OI_MESSAGE_CONTENT_TEXT]))
    .filter((t): t is string => t !== null);
  return parts.length > 0 ? parts.join('') : null;
}

function messagesOf(span: SpanView, prefix: string): ChatMessage[] | null {
  const list = indexed(span.attributes, prefix);
  if (list.length === 0) return null;
  return list.map((m, i) =>
    message(
      str(m[OI_MESSAGE_ROLE]) ?? 'user',
      contentOf(m),
      toolCallsOf(span, m, `${prefix}.${i}`),
      str(m[OI_MESSAGE_TOOL_CALL_ID]),
    ),
  );
}

/** The answer: the output messages' text and tool calls together (one message per item for Responses). */
function outputOf(outputs: ChatMessage[] | null): CallContent['output'] {
  if (outputs === null) return null;
  const texts = outputs.map((m) => m.content).filter((t): t is string => t !== null);
  return {
    text: texts.length > 0 ? texts.join('') : null,
    toolCalls: outputs.flatMap((m) => m.tool_calls ?? []),
  };
}

export const OPENINFERENCE_KINDS: Record<string, string> = {
  LLM: 'chat',
  AGENT: 'invoke_agent',
  TOOL: 'execute_tool',
  CHAIN: 'chain',
  EMBEDDING: 'embeddings',
  RETRIEVER: 'retrieval',
  RERANKER: 'rerank',
  GUARDRAIL: 'guardrail',
  EVALUATOR: 'evaluate',
};

const kindOf = (span: SpanView) => str(span.attributes[ATTR_OPENINFERENCE_SPAN_KIND])?.toUpperCase() ?? null;

export const openInference: Convention = {
  name: 'openinference',
  priority: 10,
  applies: (span) => span.attributes[ATTR_OPENINFERENCE_SPAN_KIND] !== undefined,
  operation(span) {
    const kind = kindOf(span);
    return kind === null ? null : (OPENINFERENCE_KINDS[kind] ?? kind.toLowerCase());
  },
  map(span) {
    if (kindOf(span) !== 'LLM') return null;
    const a = span.attributes;
    const model = firstStr(a, ATTR_LLM_MODEL_NAME);
    return {
      convention: 'openinference',
      provider: firstStr(a, ATTR_LLM_PROVIDER, ATTR_LLM_SYSTEM),
      requestModel: firstStr(a, ATTR_GEN_AI_REQUEST_MODEL) ?? model,
      responseModel: model,
      usage: {
        input: firstNum(a, ATTR_LLM_TOKEN_COUNT_PROMPT),
        output: firstNum(a, ATTR_LLM_TOKEN_COUNT_COMPLETION),
      },
      content: {
        input: messagesOf(span, ATTR_LLM_INPUT_MESSAGES),
        output: outputOf(messagesOf(span, ATTR_LLM_OUTPUT_MESSAGES)),
      },
    };
  },
};
