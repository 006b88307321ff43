/**
 * The wire protocols the gateway speaks, one per client dialect: OpenAI's chat completions, OpenAI's
 * Responses API, Anthropic's Messages API, OpenAI's embeddings and Google's Gemini API. Every other name for them (a gateway
 * route, a model's `api`, a cache entry's kind, a native call's API) is derived from this list.
 */
export const WIRE_PROTOCOLS = ['chat', 'responses', 'messages', 'embeddings', 'gemini'] as const;

export type WireProtocol = (typeof WIRE_PROTOCOLS)[number];

/** The protocols a registered model's upstream may speak for chat (`models.api`). */
export type ModelApi = Extract<WireProtocol, 'chat' | 'responses'>;

/** The protocols some upstreams speak natively, so that a call in them goes through as it came. */
export type NativeProtocol = Extract<WireProtocol, 'responses' | 'messages' | 'gemini'>;

/** The judge evaluator's `api` spellings (the contract's) and the protocol each one means. */
export const JUDGE_API_PROTOCOLS = {
  chat_completions: 'chat',
  messages: 'messages',
} as const satisfies Record<string, WireProtocol>;

export type JudgeApi = keyof typeof JUDGE_API_PROTOCOLS;
