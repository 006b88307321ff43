import { firstNum, firstStr, indexed, message, str, toolCall } from './read.js';
import type { Attributes, CallContent, ChatMessage, ModelCallFacts, ToolCall } from './types.js';

/**
 * OpenInference (Arize): `openinference.span.kind` LLM, `llm.model_name`, `llm.provider`/`llm.system`,
 * `llm.input_messages.{i}.message.*` and `llm.output_messages.{i}.message.*` (role, content or
 * `contents.{j}.message_content.text`, `tool_calls.{j}.tool_call.*`, `tool_call_id`),
 * `llm.token_count.{prompt,completion}`.
 */

function toolCallsOf(m: Attributes): ToolCall[] {
  return indexed(m, 'message.tool_calls').map((c, i) =>
    toolCall(str(c['tool_call.id']), str(c['tool_call.function.name']), c['tool_call.function.arguments'], i),
  );
}

function contentOf(m: Attributes): string | null {
  const direct = str(m['message.content']);
  if (direct !== null) return direct;
  const parts = indexed(m, 'message.contents')
    .filter((p) => (str(p['message_content.type']) ?? 'text') === 'text')
    .map((p) => str(p['message_content.text']))
    .filter((t): t is string => t !== null);
  return parts.length > 0 ? parts.join('') : null;
}

function messagesOf(a: Attributes, prefix: string): ChatMessage[] | null {
  const list = indexed(a, prefix);
  if (list.length === 0) return null;
  return list.map((m) =>
    message(str(m['message.role']) ?? 'user', contentOf(m), toolCallsOf(m), str(m['message.tool_call_id'])),
  );
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

export function openInferenceCall(a: Attributes): ModelCallFacts | null {
  if (str(a['openinference.span.kind'])?.toUpperCase() !== 'LLM') return null;
  const input = messagesOf(a, 'llm.input_messages');
  const outputs = messagesOf(a, 'llm.output_messages');
  const first = outputs?.[0];
  const content: CallContent = {
    input,
    output: outputs === null ? null : { text: first?.content ?? null, toolCalls: first?.tool_calls ?? [] },
  };
  const model = firstStr(a, 'llm.model_name');
  return {
    convention: 'openinference',
    provider: firstStr(a, 'llm.provider', 'llm.system'),
    requestModel: firstStr(a, 'gen_ai.request.model') ?? model,
    responseModel: model,
    usage: {
      input: firstNum(a, 'llm.token_count.prompt') ?? 0,
      output: firstNum(a, 'llm.token_count.completion') ?? 0,
    },
    content,
  };
}
