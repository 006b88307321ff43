import { isObject } from '../../shared/json.js';
import type { Usage } from '../types.js';
import { openAiCompatible } from './openai-compatible.js';
import {
  type ChatCompletion,
  type FinishReason,
  type JsonObject,
  type ProviderAdapter,
  type SseEvent,
  type StreamTranslator,
  type ToolCall,
  UpstreamStreamError,
} from './types.js';

/*
 * An upstream that speaks the Responses API, called natively by the gateway's Responses route: the
 * client's request goes as it is (the upstream's model name in it), the answer's bytes go back as they
 * are, and the answer is also read as a chat completion for pricing and the task log.
 */

/** Responses usage (input/output tokens) in the chat-completion shape. */
export function usageOfResponse(value: unknown): Usage | null {
  if (!isObject(value)) return null;
  const input = value.input_tokens;
  const output = value.output_tokens;
  if (typeof input !== 'number' || typeof output !== 'number') return null;
  const total = typeof value.total_tokens === 'number' ? value.total_tokens : input + output;
  return { prompt_tokens: input, completion_tokens: output, total_tokens: total };
}

/** A `response` object as the chat completion the task log keeps: text, tool calls, finish, usage. */
export function chatOfResponse(response: JsonObject): ChatCompletion {
  let text = '';
  const calls: ToolCall[] = [];
  const output = Array.isArray(response.output) ? response.output : [];
  for (const item of output) {
    if (!isObject(item)) continue;
    if (item.type === 'message' && Array.isArray(item.content)) {
      for (const part of item.content) {
        if (isObject(part) && part.type === 'output_text' && typeof part.text === 'string') text += part.text;
      }
    } else if (item.type === 'function_call') {
      calls.push({
        id: String(item.call_id ?? item.id ?? ''),
        type: 'function',
        function: { name: String(item.name ?? ''), arguments: String(item.arguments ?? '') },
      });
    }
  }
  const finish: FinishReason =
    calls.length > 0 ? 'tool_calls' : response.status === 'incomplete' ? 'length' : 'stop';
  return {
    id: String(response.id ?? ''),
    object: 'chat.completion',
    created: typeof response.created_at === 'number' ? response.created_at : 0,
    model: String(response.model ?? ''),
    choices: [
      {
        index: 0,
        message: {
          role: 'assistant',
          content: calls.length > 0 && text === '' ? null : text,
          refusal: null,
          ...(calls.length > 0 ? { tool_calls: calls } : {}),
        },
        finish_reason: finish,
        logprobs: null,
      },
    ],
    usage: usageOfResponse(response.usage),
  };
}

/** The events that end a Responses stream (or report its failure): the only ones parsed. */
const TERMINAL = /"type"\s*:\s*"(response\.(completed|incomplete|failed)|error)"/;

/** Responses events pass through; the terminal event's usage is kept, an error event ends the stream. */
class ResponsesPassThrough implements StreamTranslator {
  readonly passThroughUnless = TERMINAL;
  usage: Usage | null = null;
  done = false;

  event({ data }: SseEvent): string[] {
    if (!TERMINAL.test(data)) return [data];
    let parsed: unknown;
    try {
      parsed = JSON.parse(data);
    } catch {
      return [data];
    }
    if (!isObject(parsed)) return [data];
    if (parsed.type === 'error') {
      throw new UpstreamStreamError(
        String(parsed.code ?? 'upstream_error'),
        String(parsed.message ?? 'Upstream error'),
      );
    }
    const response = isObject(parsed.response) ? parsed.response : {};
    this.usage = usageOfResponse(response.usage) ?? this.usage;
    this.done = true;
    return [data];
  }
}

/**
 * The Responses API of an OpenAI-compatible upstream (`POST {base}/responses`). The call's request is
 * the client's Responses body (carried as the internal request with no messages).
 */
export const openAiResponses: ProviderAdapter = {
  ...openAiCompatible,
  chatPath: '/responses',
  protocol: 'responses',
  nativeAnswer: true,
  requestBody({ model, request }, stream) {
    const { messages: _messages, stream_options: _options, ...body } = request;
    const out: JsonObject = { ...body, model: model.upstreamModel };
    if (stream) out.stream = true;
    else delete out.stream;
    return out;
  },
  responseBody: (body) => chatOfResponse(body),
  streamTranslator: () => new ResponsesPassThrough(),
};
