import type { NativeProtocol } from '../../shared/wire-protocol.js';
import { anthropicMessages } from '../providers/anthropic-native.js';
import { openAiResponses } from '../providers/openai-responses.js';
import type { ProviderAdapter } from '../providers/types.js';

export { ANSWER_RULES, type AnswerRules } from './answer-rules.js';

/*
 * The dialect table of the provider layer: per wire protocol, what a successful upstream answer is
 * (answer-rules.ts, also the response cache's rule of what it may keep), and for the protocols some
 * upstreams speak natively, the adapter that carries such a call as it came. A new dialect adds its folder
 * under dialects/ and its rows here and in answer-rules.ts.
 */

/** The adapter of a call made in a dialect the model's upstream speaks natively (`CallOptions.api`). */
export const NATIVE_ADAPTERS: Record<NativeProtocol, ProviderAdapter> = {
  responses: openAiResponses,
  messages: anthropicMessages,
};
