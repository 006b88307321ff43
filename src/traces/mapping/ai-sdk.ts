import { asObject, firstNum, firstStr, message, parsed, str, textOf, toolCall } from './read.js';
import type { Attributes, ChatMessage, JsonValue, ModelCallFacts, ToolCall } from './types.js';

/**
 * The AI SDK's `experimental_telemetry`: the provider call is the inner `ai.*.doGenerate` /
 * `ai.*.doStream` span, with `ai.model.id`, `ai.model.provider`, `ai.prompt.messages` (JSON),
 * `ai.response.text`, `ai.response.toolCalls` (JSON) and `ai.usage.*`.
 */

const CALL_OPERATIONS = /^ai\.(generateText|streamText|generateObject|streamObject)\.do(Generate|Stream)$/;

function partsText(v: JsonValue | undefined): {
  text: string | null;
  toolCalls: ToolCall[];
  results: ChatMessage[];
} {
  const out = { text: textOf(v), toolCalls: [] as ToolCall[], results: [] as ChatMessage[] };
  const list = parsed(v);
  if (!Array.isArray(list)) return out;
  list.forEach((raw, i) => {
    const p = asObject(raw);
    if (!p) return;
    if (p.type === 'tool-call')
      out.toolCalls.push(toolCall(str(p.toolCallId), str(p.toolName), p.input ?? p.args, i));
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

function promptMessages(v: JsonValue | undefined): ChatMessage[] | null {
  const list = parsed(v);
  if (!Array.isArray(list)) return null;
  return list.flatMap((raw) => {
    const m = asObject(raw);
    if (!m) return [];
    const parts = partsText(m.content);
    if (parts.results.length > 0) return parts.results;
    return [message(str(m.role) ?? 'user', parts.text, parts.toolCalls)];
  });
}

function toolCallsOf(v: JsonValue | undefined): ToolCall[] {
  const list = parsed(v);
  if (!Array.isArray(list)) return [];
  return list.flatMap((raw, i) => {
    const c = asObject(raw);
    return c ? [toolCall(str(c.toolCallId), str(c.toolName), c.input ?? c.args, i)] : [];
  });
}

export function aiSdkCall(a: Attributes): ModelCallFacts | null {
  const op = firstStr(a, 'ai.operationId');
  if (op === null || !CALL_OPERATIONS.test(op)) return null;
  const hasOutput = a['ai.response.text'] !== undefined || a['ai.response.toolCalls'] !== undefined;
  const provider = firstStr(a, 'gen_ai.system', 'ai.model.provider');
  return {
    convention: 'ai-sdk',
    provider: provider?.split('.')[0] ?? null,
    requestModel: firstStr(a, 'gen_ai.request.model', 'ai.model.id'),
    responseModel: firstStr(a, 'gen_ai.response.model', 'ai.response.model'),
    usage: {
      input: firstNum(a, 'ai.usage.inputTokens', 'ai.usage.promptTokens', 'gen_ai.usage.input_tokens') ?? 0,
      output:
        firstNum(a, 'ai.usage.outputTokens', 'ai.usage.completionTokens', 'gen_ai.usage.output_tokens') ?? 0,
    },
    content: {
      input: promptMessages(a['ai.prompt.messages']),
      output: hasOutput
        ? { text: firstStr(a, 'ai.response.text'), toolCalls: toolCallsOf(a['ai.response.toolCalls']) }
        : null,
    },
  };
}
