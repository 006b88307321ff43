import { isObject } from '../../shared/json.js';
import type { Usage } from '../types.js';
import { type JsonTool, jsonToolOf, toMessagesRequest } from './anthropic-request.js';
import { openAiCompatible } from './openai-compatible.js';
import {
  type CallContext,
  type ChatChunk,
  type ChatCompletion,
  type ChunkDelta,
  DONE,
  defineProvider,
  type FinishReason,
  type JsonObject,
  type StreamTranslator,
  type ToolCall,
  UpstreamStreamError,
} from './types.js';

export const ANTHROPIC_VERSION = '2023-06-01';

const num = (value: unknown): number => (typeof value === 'number' ? value : 0);

const STOP_REASONS: Record<string, FinishReason> = {
  end_turn: 'stop',
  stop_sequence: 'stop',
  pause_turn: 'stop',
  max_tokens: 'length',
  tool_use: 'tool_calls',
  refusal: 'content_filter',
};

function finishReason(stopReason: unknown, jsonTool: JsonTool | null): FinishReason | null {
  if (typeof stopReason !== 'string') return null;
  // The forced tool of a json_schema response is an answer, not a tool call.
  if (stopReason === 'tool_use' && jsonTool) return 'stop';
  return STOP_REASONS[stopReason] ?? 'stop';
}

/** Anthropic counts cached prompt tokens apart; the chat-completion usage counts them as prompt tokens. */
function usageOf(inputUsage: JsonObject, outputTokens: number): Usage {
  const prompt =
    num(inputUsage.input_tokens) +
    num(inputUsage.cache_creation_input_tokens) +
    num(inputUsage.cache_read_input_tokens);
  return { prompt_tokens: prompt, completion_tokens: outputTokens, total_tokens: prompt + outputTokens };
}

function jsonAnswer(input: unknown, tool: JsonTool): string {
  const value = tool.wrapped && isObject(input) ? input.value : input;
  return JSON.stringify(value ?? null);
}

/** An Anthropic Messages response as a chat completion. */
function fromMessagesResponse(body: JsonObject, ctx: CallContext): ChatCompletion {
  const jsonTool = jsonToolOf(ctx.request);
  let text = '';
  const toolCalls: ToolCall[] = [];
  for (const block of Array.isArray(body.content) ? (body.content as unknown[]) : []) {
    if (!isObject(block)) continue;
    if (block.type === 'text' && typeof block.text === 'string') text += block.text;
    else if (block.type === 'tool_use') {
      if (jsonTool && block.name === jsonTool.name) text += jsonAnswer(block.input, jsonTool);
      else
        toolCalls.push({
          id: String(block.id ?? ''),
          type: 'function',
          function: { name: String(block.name ?? ''), arguments: JSON.stringify(block.input ?? {}) },
        });
    }
  }
  const usage = isObject(body.usage) ? usageOf(body.usage, num(body.usage.output_tokens)) : null;
  const message: ChatCompletion['choices'][number]['message'] = {
    role: 'assistant',
    content: text === '' && toolCalls.length > 0 ? null : text,
    refusal: null,
  };
  if (toolCalls.length > 0) message.tool_calls = toolCalls;
  return {
    id: String(body.id ?? ''),
    object: 'chat.completion',
    created: Math.floor(Date.now() / 1000),
    model: String(body.model ?? ctx.model.upstreamModel),
    choices: [{ index: 0, message, finish_reason: finishReason(body.stop_reason, jsonTool), logprobs: null }],
    usage,
  };
}

type BlockKind = 'text' | 'tool' | 'json' | 'other';

/** Anthropic's event stream (message_start, content_block_*, message_delta, message_stop) as chunks. */
function messagesStreamTranslator(ctx: CallContext): StreamTranslator {
  const jsonTool = jsonToolOf(ctx.request);
  let id = '';
  let model = ctx.model.upstreamModel;
  const created = Math.floor(Date.now() / 1000);
  let inputUsage: JsonObject = {};
  let outputTokens = 0;
  let usage: Usage | null = null;
  let done = false;
  let nextTool = 0;
  const blocks = new Map<number, { kind: BlockKind; tool: number; json: string }>();

  const chunk = (delta: ChunkDelta, finish: FinishReason | null = null): string => {
    const out: ChatChunk = {
      id,
      object: 'chat.completion.chunk',
      created,
      model,
      choices: [{ index: 0, delta, finish_reason: finish, logprobs: null }],
    };
    return JSON.stringify(out);
  };

  function onBlockStart(index: number, block: JsonObject): string[] {
    if (block.type === 'text') {
      blocks.set(index, { kind: 'text', tool: -1, json: '' });
      return typeof block.text === 'string' && block.text !== '' ? [chunk({ content: block.text })] : [];
    }
    if (block.type === 'tool_use') {
      if (jsonTool && block.name === jsonTool.name) {
        blocks.set(index, { kind: 'json', tool: -1, json: '' });
        return [];
      }
      const tool = nextTool++;
      blocks.set(index, { kind: 'tool', tool, json: '' });
      const call = { index: tool, id: String(block.id ?? ''), type: 'function' as const };
      return [
        chunk({ tool_calls: [{ ...call, function: { name: String(block.name ?? ''), arguments: '' } }] }),
      ];
    }
    blocks.set(index, { kind: 'other', tool: -1, json: '' });
    return [];
  }

  function onBlockDelta(index: number, delta: JsonObject): string[] {
    const block = blocks.get(index);
    if (!block) return [];
    if (delta.type === 'text_delta' && typeof delta.text === 'string')
      return [chunk({ content: delta.text })];
    if (delta.type !== 'input_json_delta' || typeof delta.partial_json !== 'string') return [];
    if (block.kind === 'tool') {
      return [chunk({ tool_calls: [{ index: block.tool, function: { arguments: delta.partial_json } }] })];
    }
    if (block.kind === 'json') {
      // A wrapped answer can only be unwrapped once complete; a plain one streams as content.
      if (jsonTool?.wrapped) block.json += delta.partial_json;
      else return [chunk({ content: delta.partial_json })];
    }
    return [];
  }

  function onBlockStop(index: number): string[] {
    const block = blocks.get(index);
    if (block?.kind !== 'json' || !jsonTool?.wrapped) return [];
    let input: unknown = {};
    try {
      input = JSON.parse(block.json);
    } catch {
      input = null;
    }
    return [chunk({ content: jsonAnswer(input, jsonTool) })];
  }

  return {
    get usage() {
      return usage;
    },
    get done() {
      return done;
    },
    event({ event, data }) {
      if (event === 'ping' || data === '') return [];
      let payload: unknown;
      try {
        payload = JSON.parse(data);
      } catch {
        throw new UpstreamStreamError('upstream_unavailable', 'The upstream sent an unreadable stream event');
      }
      if (!isObject(payload)) return [];
      const index = num(payload.index);
      switch (payload.type) {
        case 'message_start': {
          const message = isObject(payload.message) ? payload.message : {};
          id = String(message.id ?? '');
          model = String(message.model ?? model);
          inputUsage = isObject(message.usage) ? message.usage : {};
          outputTokens = isObject(message.usage) ? num(message.usage.output_tokens) : 0;
          usage = usageOf(inputUsage, outputTokens);
          return [chunk({ role: 'assistant', content: '' })];
        }
        case 'content_block_start':
          return isObject(payload.content_block) ? onBlockStart(index, payload.content_block) : [];
        case 'content_block_delta':
          return isObject(payload.delta) ? onBlockDelta(index, payload.delta) : [];
        case 'content_block_stop':
          return onBlockStop(index);
        case 'message_delta': {
          const delta = isObject(payload.delta) ? payload.delta : {};
          if (isObject(payload.usage)) {
            outputTokens = num(payload.usage.output_tokens) || outputTokens;
            if (typeof payload.usage.input_tokens === 'number')
              inputUsage = { ...inputUsage, ...payload.usage };
          }
          usage = usageOf(inputUsage, outputTokens);
          const finish = finishReason(delta.stop_reason, jsonTool);
          return finish ? [chunk({}, finish)] : [];
        }
        case 'message_stop': {
          done = true;
          if (!ctx.clientWantsUsage || !usage) return [DONE];
          const last: ChatChunk = { id, object: 'chat.completion.chunk', created, model, choices: [], usage };
          return [JSON.stringify(last), DONE];
        }
        case 'error': {
          const error = isObject(payload.error) ? payload.error : {};
          throw new UpstreamStreamError(
            error.type === 'overloaded_error'
              ? 'upstream_unavailable'
              : String(error.type ?? 'upstream_error'),
            String(error.message ?? 'The upstream reported an error'),
          );
        }
        default:
          return [];
      }
    },
  };
}

/** Anthropic Messages: the OpenAI-compatible base with its own path, headers and translations. */
export const anthropic = defineProvider(openAiCompatible, {
  kind: 'anthropic',
  protocol: 'messages',
  chatPath: '/messages',
  headers(model) {
    const headers: Record<string, string> = {
      'content-type': 'application/json',
      'anthropic-version': ANTHROPIC_VERSION,
    };
    if (model.apiKey) headers['x-api-key'] = model.apiKey;
    return headers;
  },
  requestBody: ({ model, request }, stream) => toMessagesRequest(request, model.upstreamModel, stream),
  responseBody: fromMessagesResponse,
  streamTranslator: messagesStreamTranslator,
});
