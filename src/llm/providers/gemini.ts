import { randomBytes } from 'node:crypto';
import { isObject } from '../../shared/json.js';
import type { ResolvedModel } from '../models/types.js';
import type { Usage } from '../types.js';
import { toGenerateContentRequest } from './gemini-request.js';
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
  type SseEvent,
  type StreamTranslator,
  type ToolCall,
  UpstreamStreamError,
} from './types.js';

/*
 * Google's Gemini API as an upstream: `{base}/models/{model}:generateContent` and
 * `:streamGenerateContent?alt=sse` (the base names the API version, e.g.
 * `https://generativelanguage.googleapis.com/v1beta`), the key in `x-goog-api-key`. Requests are translated
 * from the internal chat request (gemini-request.ts); answers and streams back to chat completions.
 */

const num = (value: unknown): number => (typeof value === 'number' ? value : 0);

/** `models/{model}:{method}`, each segment of the model's name escaped (a leading `models/` is the path's own). */
export function geminiMethodPath(model: ResolvedModel, stream: boolean): string {
  const name = model.upstreamModel.replace(/^models\//, '');
  const escaped = name.split('/').map(encodeURIComponent).join('/');
  return `/models/${escaped}:${stream ? 'streamGenerateContent?alt=sse' : 'generateContent'}`;
}

const FINISH_REASONS: Record<string, FinishReason> = {
  STOP: 'stop',
  MAX_TOKENS: 'length',
  SAFETY: 'content_filter',
  RECITATION: 'content_filter',
  BLOCKLIST: 'content_filter',
  PROHIBITED_CONTENT: 'content_filter',
  SPII: 'content_filter',
  IMAGE_SAFETY: 'content_filter',
};

/** The chat finish reason of a Gemini one (a turn that called functions ends in `tool_calls`). */
export function finishReasonOf(reason: unknown, calledTools: boolean): FinishReason | null {
  if (typeof reason !== 'string' || reason === '' || reason === 'FINISH_REASON_UNSPECIFIED') return null;
  const mapped = FINISH_REASONS[reason] ?? 'stop';
  return mapped === 'stop' && calledTools ? 'tool_calls' : mapped;
}

/**
 * `usageMetadata` as chat usage: the model's thinking is billed as output, so it counts as completion
 * tokens (and reasoning tokens); cached prompt tokens are prompt tokens (and cached tokens).
 */
export function usageOf(metadata: unknown): Usage | null {
  if (!isObject(metadata)) return null;
  const prompt = num(metadata.promptTokenCount) + num(metadata.toolUsePromptTokenCount);
  const thoughts = num(metadata.thoughtsTokenCount);
  const completion = num(metadata.candidatesTokenCount) + thoughts;
  const usage: Usage & JsonObject = {
    prompt_tokens: prompt,
    completion_tokens: completion,
    total_tokens: prompt + completion,
  };
  if (typeof metadata.cachedContentTokenCount === 'number')
    usage.prompt_tokens_details = { cached_tokens: metadata.cachedContentTokenCount };
  if (thoughts > 0) usage.completion_tokens_details = { reasoning_tokens: thoughts };
  return usage;
}

/** An id for a function call that came without one (Gemini's API mostly gives none). */
function callId(given: unknown): string {
  return typeof given === 'string' && given !== '' ? given : `call_${randomBytes(12).toString('hex')}`;
}

/** A functionCall part as a tool call; its thought signature kept where Google's own OpenAI endpoint puts it. */
function toolCallOf(part: JsonObject, call: JsonObject): ToolCall {
  const out: ToolCall & { extra_content?: JsonObject } = {
    id: callId(call.id),
    type: 'function',
    function: { name: String(call.name ?? ''), arguments: JSON.stringify(call.args ?? {}) },
  };
  if (typeof part.thoughtSignature === 'string')
    out.extra_content = { google: { thought_signature: part.thoughtSignature } };
  return out;
}

/** A candidate's answer: its text (thoughts left out) and function calls. */
function partsOf(candidate: JsonObject): { text: string; calls: ToolCall[] } {
  const content = isObject(candidate.content) ? candidate.content : {};
  let text = '';
  const calls: ToolCall[] = [];
  for (const part of Array.isArray(content.parts) ? (content.parts as unknown[]) : []) {
    if (!isObject(part) || part.thought === true) continue;
    if (typeof part.text === 'string') text += part.text;
    else if (isObject(part.functionCall)) calls.push(toolCallOf(part, part.functionCall));
  }
  return { text, calls };
}

/** A GenerateContentResponse as a chat completion (its first candidate: requests never ask for more). */
export function fromGenerateContentResponse(body: JsonObject, ctx: CallContext): ChatCompletion {
  const candidates = Array.isArray(body.candidates) ? (body.candidates as unknown[]) : [];
  const candidate = isObject(candidates[0]) ? candidates[0] : {};
  const { text, calls } = partsOf(candidate);
  const message: ChatCompletion['choices'][number]['message'] = {
    role: 'assistant',
    content: text === '' && calls.length > 0 ? null : text,
    refusal: null,
  };
  if (calls.length > 0) message.tool_calls = calls;
  return {
    id: String(body.responseId ?? ''),
    object: 'chat.completion',
    created: Math.floor(Date.now() / 1000),
    model: String(body.modelVersion ?? ctx.model.upstreamModel),
    choices: [
      {
        index: 0,
        message,
        finish_reason: finishReasonOf(candidate.finishReason, calls.length > 0) ?? 'stop',
        logprobs: null,
      },
    ],
    usage: usageOf(body.usageMetadata),
  };
}

/** Google's error status names that mean "try again later". */
const UNAVAILABLE = new Set(['UNAVAILABLE', 'INTERNAL', 'RESOURCE_EXHAUSTED', 'DEADLINE_EXCEEDED']);

/** An error event inside a stream (`{"error": {code, message, status}}`) as the stream error it means. */
function streamError(error: JsonObject): UpstreamStreamError {
  const status = String(error.status ?? '');
  return new UpstreamStreamError(
    UNAVAILABLE.has(status) || num(error.code) >= 500 ? 'upstream_unavailable' : 'upstream_error',
    String(error.message ?? 'The upstream reported an error'),
  );
}

/**
 * Gemini's event stream (`alt=sse`: one GenerateContentResponse per event, usage growing, the finish
 * reason on the last) as chat-completion chunks: text as it comes, each function call whole.
 */
export class GeminiStreamTranslator implements StreamTranslator {
  usage: Usage | null = null;
  done = false;
  private id = '';
  private model: string;
  private readonly created = Math.floor(Date.now() / 1000);
  private started = false;
  private tools = 0;

  constructor(private readonly ctx: CallContext) {
    this.model = ctx.model.upstreamModel;
  }

  private chunk(delta: ChunkDelta, finish: FinishReason | null = null): string {
    const out: ChatChunk = {
      id: this.id,
      object: 'chat.completion.chunk',
      created: this.created,
      model: this.model,
      choices: [{ index: 0, delta, finish_reason: finish, logprobs: null }],
    };
    return JSON.stringify(out);
  }

  private end(finish: FinishReason): string[] {
    this.done = true;
    const out = [this.chunk({}, finish)];
    if (this.ctx.clientWantsUsage && this.usage) {
      const last: ChatChunk = {
        id: this.id,
        object: 'chat.completion.chunk',
        created: this.created,
        model: this.model,
        choices: [],
        usage: this.usage,
      };
      out.push(JSON.stringify(last));
    }
    out.push(DONE);
    return out;
  }

  event({ data }: SseEvent): string[] {
    if (data === '' || this.done) return [];
    let payload: unknown;
    try {
      payload = JSON.parse(data);
    } catch {
      throw new UpstreamStreamError('upstream_unavailable', 'The upstream sent an unreadable stream event');
    }
    if (!isObject(payload)) return [];
    if (isObject(payload.error)) throw streamError(payload.error);
    if (typeof payload.responseId === 'string') this.id = payload.responseId;
    if (typeof payload.modelVersion === 'string') this.model = payload.modelVersion;
    this.usage = usageOf(payload.usageMetadata) ?? this.usage;
    const out: string[] = [];
    if (!this.started) {
      this.started = true;
      out.push(this.chunk({ role: 'assistant', content: '' }));
    }
    const candidates = Array.isArray(payload.candidates) ? (payload.candidates as unknown[]) : [];
    const candidate = isObject(candidates[0]) ? candidates[0] : null;
    if (!candidate) return out;
    const { text, calls } = partsOf(candidate);
    if (text !== '') out.push(this.chunk({ content: text }));
    for (const call of calls) out.push(this.chunk({ tool_calls: [{ index: this.tools++, ...call }] }));
    const finish = finishReasonOf(candidate.finishReason, this.tools > 0);
    if (finish) out.push(...this.end(finish));
    return out;
  }
}

/** Gemini's generateContent: the OpenAI-compatible base with its own paths, header and translations. */
export const gemini = defineProvider(openAiCompatible, {
  kind: 'gemini',
  protocol: 'gemini',
  chatPath: '/models',
  callPath: geminiMethodPath,
  headers(model) {
    const headers: Record<string, string> = { 'content-type': 'application/json' };
    if (model.apiKey) headers['x-goog-api-key'] = model.apiKey;
    return headers;
  },
  requestBody: ({ request }) => toGenerateContentRequest(request),
  responseBody: fromGenerateContentResponse,
  streamTranslator: (ctx) => new GeminiStreamTranslator(ctx),
});
