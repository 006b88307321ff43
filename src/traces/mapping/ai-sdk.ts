import {
  ATTR_AI_MODEL_ID,
  ATTR_AI_MODEL_PROVIDER,
  ATTR_AI_OPERATION_ID,
  ATTR_AI_PROMPT_MESSAGES,
  ATTR_AI_RESPONSE_MODEL,
  ATTR_AI_RESPONSE_TEXT,
  ATTR_AI_RESPONSE_TOOL_CALLS,
  ATTR_AI_USAGE_COMPLETION_TOKENS,
  ATTR_AI_USAGE_INPUT_TOKENS,
  ATTR_AI_USAGE_OUTPUT_TOKENS,
  ATTR_AI_USAGE_PROMPT_TOKENS,
  ATTR_GEN_AI_REQUEST_MODEL,
  ATTR_GEN_AI_RESPONSE_MODEL,
  ATTR_GEN_AI_SYSTEM,
  ATTR_GEN_AI_USAGE_INPUT_TOKENS,
  ATTR_GEN_AI_USAGE_OUTPUT_TOKENS,
} from '../../shared/genai-attributes.js';
import { asObject, callSite, firstNum, firstStr, message, parsed, str, textOf, toolCall } from './read.js';
import type { ChatMessage, Convention, JsonValue, SpanView, ToolCall } from './types.js';

/**
 * The AI SDK's `experimental_telemetry`: the provider call is the inner `ai.*.doGenerate` /
 * `ai.*.doStream` span, with `ai.model.id`, `ai.model.provider`, `ai.prompt.messages` (JSON),
 * `ai.response.text`, `ai.response.toolCalls` (JSON) and `ai.usage.*`.
 */

const CALL_OPERATIONS = /^ai\.(generateText|streamText|generateObject|streamObject)\.do(Generate|Stream)$/;

function partsText(
  v: JsonValue | undefined,
  site: string,
): { text: string | null; toolCalls: ToolCall[]; results: ChatMessage[] } {
  const out = { text: textOf(v), toolCalls: [] as ToolCall[], results: [] as ChatMessage[] };
  const list = parsed(v);
  if (!Array.isArray(list)) return out;
  list.forEach((raw, i) => {
    const p = asObject(raw);
    if (!p) return;
    if (p.type === 'tool-call')
      out.toolCalls.push(toolCall(str(p.toolCallId), str(p.toolName), p.input ?? p.args, `${site}/${i}`));
    if (p.type === 'tool-result') {
      const r = p.output ?? p.result ?? null;
      const value = asObject(r)?.value ?? r;
      out.results.push(
        message('tool', typeof value === 'string' ? value : JSON.stringify(value), [], str(p.toolCallId)),
      );
    }
  });
  return out;
}

function promptMessages(span: SpanView): ChatMessage[] | null {
  const list = parsed(span.attributes[ATTR_AI_PROMPT_MESSAGES]);
  if (!Array.isArray(list)) return null;
  return list.flatMap((raw, i) => {
    const m = asObject(raw);
    if (!m) return [];
    const parts = partsText(m.content, callSite(span, 'input', i));
    if (parts.results.length > 0) return parts.results;
    return [message(str(m.role) ?? 'user', parts.text, parts.toolCalls)];
  });
}

function toolCallsOf(span: SpanView): ToolCall[] {
  const list = parsed(span.attributes[ATTR_AI_RESPONSE_TOOL_CALLS]);
  if (!Array.isArray(list)) return [];
  return list.flatMap((raw, i) => {
    const c = asObject(raw);
    return c
      ? [toolCall(str(c.toolCallId), str(c.toolName), c.input ?? c.args, callSite(span, 'output', i))]
      : [];
  });
}

export const aiSdk: Convention = {
  name: 'ai-sdk',
  priority: 20,
  applies: (span) => span.attributes[ATTR_AI_OPERATION_ID] !== undefined,
  map(span) {
    const a = span.attributes;
    const op = firstStr(a, ATTR_AI_OPERATION_ID);
    if (op === null || !CALL_OPERATIONS.test(op)) return null;
    const hasOutput = a[ATTR_AI_RESPONSE_TEXT] !== undefined || a[ATTR_AI_RESPONSE_TOOL_CALLS] !== undefined;
    const provider = firstStr(a, ATTR_GEN_AI_SYSTEM, ATTR_AI_MODEL_PROVIDER);
    return {
      convention: 'ai-sdk',
      // `openai.chat`, `openai.responses`: the provider is the part before the API.
      provider: provider?.split('.')[0] ?? null,
      requestModel: firstStr(a, ATTR_GEN_AI_REQUEST_MODEL, ATTR_AI_MODEL_ID),
      responseModel: firstStr(a, ATTR_GEN_AI_RESPONSE_MODEL, ATTR_AI_RESPONSE_MODEL),
      usage: {
        input: firstNum(
          a,
          ATTR_AI_USAGE_INPUT_TOKENS,
          ATTR_AI_USAGE_PROMPT_TOKENS,
          ATTR_GEN_AI_USAGE_INPUT_TOKENS,
        ),
        output: firstNum(
          a,
          ATTR_AI_USAGE_OUTPUT_TOKENS,
          ATTR_AI_USAGE_COMPLETION_TOKENS,
          ATTR_GEN_AI_USAGE_OUTPUT_TOKENS,
        ),
      },
      content: {
        input: promptMessages(span),
        output: hasOutput ? { text: firstStr(a, ATTR_AI_RESPONSE_TEXT), toolCalls: toolCallsOf(span) } : null,
      },
    };
  },
};
