import { chatAnswer } from '../../shared/chat-answer.js';
import { isObject } from '../../shared/json.js';
import type { Usage } from '../types.js';
import {
  DONE,
  type JsonObject,
  type ProviderAdapter,
  type SseEvent,
  type StreamTranslator,
} from './types.js';

/** Usage in the chat-completion shape, or null when the value is not one. */
export function readUsage(value: unknown): Usage | null {
  if (!isObject(value)) return null;
  const prompt = value.prompt_tokens;
  const completion = value.completion_tokens;
  if (typeof prompt !== 'number' || typeof completion !== 'number') return null;
  const total = typeof value.total_tokens === 'number' ? value.total_tokens : prompt + completion;
  return { ...value, prompt_tokens: prompt, completion_tokens: completion, total_tokens: total };
}

/** The first choice's text of a chat completion, '' when there is none. */
export function completionText(body: unknown): string {
  return chatAnswer(body).text;
}

/** `{"error":{"message":…}}` (OpenAI, Anthropic, vLLM), `{"message":…}` or `{"error":"…"}`, or `{"detail":…}`. */
function errorMessage(body: unknown): string | null {
  if (typeof body === 'string') return body.trim() === '' ? null : body.slice(0, 2000);
  if (!isObject(body)) return null;
  const { error } = body;
  if (isObject(error) && typeof error.message === 'string') return error.message;
  if (typeof error === 'string') return error;
  if (typeof body.message === 'string') return body.message;
  if (typeof body.detail === 'string') return body.detail;
  return null;
}

// A chunk carries real usage when its usage is an object (not null). Only such chunks are parsed.
const CARRIES_USAGE = /"usage"\s*:\s*\{/;
/** The events a pass-through stream must look at: those carrying usage, and the end marker. */
const USAGE_OR_DONE = new RegExp(`${CARRIES_USAGE.source}|\\[DONE\\]`);

/**
 * Upstream chunks already are chat-completion chunks: they pass through untouched. Only the chunk that
 * carries usage is parsed; when the gateway asked for it but the client did not, it is dropped.
 * A class rather than an object literal with getters: one is made per streamed call.
 */
class PassThroughTranslator implements StreamTranslator {
  // Every other event passes untouched: only usage and the end marker matter here.
  readonly passThroughUnless = USAGE_OR_DONE;
  usage: Usage | null = null;
  done = false;

  constructor(private readonly clientWantsUsage: boolean) {}

  event({ data }: SseEvent): string[] {
    if (data === DONE) {
      this.done = true;
      return [data];
    }
    if (CARRIES_USAGE.test(data)) {
      let chunk: unknown;
      try {
        chunk = JSON.parse(data);
      } catch {
        return [data];
      }
      if (isObject(chunk)) {
        this.usage = readUsage(chunk.usage) ?? this.usage;
        const usageOnly = Array.isArray(chunk.choices) && chunk.choices.length === 0;
        if (usageOnly && !this.clientWantsUsage) return [];
      }
    }
    return [data];
  }
}

/**
 * The base adapter: OpenAI itself and any compatible server (vLLM, Ollama, LiteLLM, …). Requests go
 * out as the client sent them (unknown fields included) with the upstream's model name; streams ask
 * for usage so that every call can be priced and recorded.
 */
export const openAiCompatible: ProviderAdapter = {
  kind: 'openai-compatible',
  protocol: 'chat',
  chatPath: '/chat/completions',
  headers(model) {
    const headers: Record<string, string> = { 'content-type': 'application/json' };
    if (model.apiKey) headers.authorization = `Bearer ${model.apiKey}`;
    return headers;
  },
  requestBody({ model, request }, stream) {
    if (stream) {
      const asked = request.stream_options;
      const options = isObject(asked) ? { ...asked, include_usage: true } : { include_usage: true };
      return { ...request, model: model.upstreamModel, stream: true, stream_options: options };
    }
    const body: JsonObject = { ...request, model: model.upstreamModel };
    delete body.stream;
    delete body.stream_options;
    return body;
  },
  responseBody: () => null,
  errorMessage,
  streamTranslator: (ctx) => new PassThroughTranslator(ctx.clientWantsUsage),
};
