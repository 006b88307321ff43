import type { ResolvedModel } from './models/types.js';

/** A chat-completion request body in the widely used wire format; unknown fields pass through. */
export interface ChatRequest {
  model: string;
  messages: ChatMessage[];
  stream?: boolean;
  [field: string]: unknown;
}

export interface ChatMessage {
  role: string;
  content?: unknown;
  [field: string]: unknown;
}

export interface Usage {
  prompt_tokens: number;
  completion_tokens: number;
  total_tokens: number;
}

/** The outcome of one non-streamed call made through the provider layer. */
export interface CompletionResult {
  /** The chat-completion response body (translated when the provider is not OpenAI-compatible). */
  body: Record<string, unknown>;
  /** Text of the first choice, '' when none. */
  text: string;
  usage: Usage | null;
  /** USD, from the model's prices. */
  cost: number;
  latencyMs: number;
  /** Slug of the model that answered (differs from the request when a fallback served it). */
  servedBy: string;
}

/**
 * The plain-function interface of the provider layer, used by the HTTP gateway and by evaluation runs
 * (judges, generation) alike. Throws ApiError: `upstream_unavailable` (after retries and fallbacks),
 * `rate_limit_exceeded` (with `retry_after` in details and a Retry-After header), or the upstream's 4xx.
 */
export interface ProviderCaller {
  complete(
    model: ResolvedModel,
    request: ChatRequest,
    /** `projectId` lets registered fallback labels of the model be resolved (else only frontier slugs). */
    options?: { signal?: AbortSignal; projectId?: string },
  ): Promise<CompletionResult>;
}
