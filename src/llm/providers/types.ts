import type { JsonObject } from '../../shared/json.js';
import type { WireProtocol } from '../../shared/wire-protocol.js';
import type { ProviderKind, ResolvedModel } from '../models/types.js';
import type { ChatRequest, Usage } from '../types.js';

export type { JsonObject };

export type FinishReason = 'stop' | 'length' | 'tool_calls' | 'content_filter' | 'function_call';

export interface ToolCall {
  id: string;
  type: 'function';
  function: { name: string; arguments: string };
}

export interface AssistantMessage {
  role: 'assistant';
  content: string | null;
  refusal: string | null;
  tool_calls?: ToolCall[];
}

/** A `chat.completion` response body (the fields Evalgate reads or produces; upstreams may add more). */
export interface ChatCompletion {
  id: string;
  object: 'chat.completion';
  created: number;
  model: string;
  choices: { index: number; message: AssistantMessage; finish_reason: FinishReason | null; logprobs: null }[];
  usage: Usage | null;
  [field: string]: unknown;
}

export interface ToolCallDelta {
  index: number;
  id?: string;
  type?: 'function';
  function: { name?: string; arguments: string };
}

export interface ChunkDelta {
  role?: 'assistant';
  content?: string;
  tool_calls?: ToolCallDelta[];
}

/** A `chat.completion.chunk` stream payload. */
export interface ChatChunk {
  id: string;
  object: 'chat.completion.chunk';
  created: number;
  model: string;
  choices: { index: number; delta: ChunkDelta; finish_reason: FinishReason | null; logprobs: null }[];
  usage?: Usage | null;
}

/** One server-sent event as read from an upstream. */
export interface SseEvent {
  event: string | null;
  data: string;
}

/** The end of the stream in the chat-completion protocol. */
export const DONE = '[DONE]';

/** An error reported by the upstream inside a stream that had already started. */
export class UpstreamStreamError extends Error {
  override name = 'UpstreamStreamError';
  constructor(
    readonly code: string,
    message: string,
  ) {
    super(message);
  }
}

/**
 * Turns an upstream event stream into chat-completion chunk payloads (the text after `data: `,
 * `[DONE]` last). Tracks usage on the way so the caller can price and record the call.
 */
export interface StreamTranslator {
  /** Payloads to emit for one upstream event; throws UpstreamStreamError on an upstream error event. */
  event(event: SseEvent): string[];
  /** Usage reported by the upstream so far. */
  readonly usage: Usage | null;
  /** True once the upstream signalled the end of the stream. */
  readonly done: boolean;
  /**
   * Set when every event passes unchanged unless its text matches this pattern (e.g. it carries usage,
   * or is the end marker): reads with no match are then sent on without being parsed.
   */
  readonly passThroughUnless?: RegExp;
}

/** What an adapter needs to know about one call. */
export interface CallContext {
  model: ResolvedModel;
  /** The request after the model's default parameters were applied. */
  request: ChatRequest;
  /** Whether the caller asked for the usage chunk at the end of a stream. */
  clientWantsUsage: boolean;
}

/**
 * A provider, declared as data plus pure translation functions. Every adapter starts from the
 * OpenAI-compatible base (`defineProvider(openAiCompatible, {...})`) and overrides what differs.
 */
export interface ProviderAdapter {
  readonly kind: ProviderKind;
  /** The wire protocol the upstream speaks (whose definition of a successful answer applies). */
  readonly protocol: WireProtocol;
  /** Appended to the model's base URL. */
  readonly chatPath: string;
  /**
   * The path of a call when it depends on the model and on whether it streams (Gemini's
   * `/models/{model}:generateContent`); `chatPath` when absent.
   */
  callPath?(model: ResolvedModel, stream: boolean): string;
  /**
   * The upstream's answer goes to the client as it is (a dialect spoken natively): `responseBody` then
   * only reads it as a chat completion for pricing and the task log.
   */
  readonly nativeAnswer?: boolean;
  headers(model: ResolvedModel): Record<string, string>;
  requestBody(ctx: CallContext, stream: boolean): JsonObject;
  /** The upstream's JSON answer as a chat completion; `null` means it already is one (sent on as is). */
  responseBody(body: JsonObject, ctx: CallContext): ChatCompletion | null;
  /** The human-readable message inside an upstream error body, when there is one. */
  errorMessage(body: unknown): string | null;
  streamTranslator(ctx: CallContext): StreamTranslator;
}

/** "The base, minus X, plus Y": a provider is its base with some members replaced. */
export function defineProvider(base: ProviderAdapter, overrides: Partial<ProviderAdapter>): ProviderAdapter {
  return { ...base, ...overrides };
}
