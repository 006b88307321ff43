import type { JsonObject } from '../../shared/json.js';
import type { NativeProtocol, WireProtocol } from '../../shared/wire-protocol.js';
import { anthropicMessages } from '../providers/anthropic-native.js';
import { openAiResponses } from '../providers/openai-responses.js';
import type { ProviderAdapter } from '../providers/types.js';
import { chatAnswerProblem, chatStreamStartProblem } from './chat/success.js';
import { embeddingsAnswerProblem, embeddingsStreamStartProblem } from './embeddings/success.js';
import { messagesAnswerProblem, messagesStreamStartProblem } from './messages/success.js';
import { responsesAnswerProblem, responsesStreamStartProblem } from './responses/success.js';

/*
 * The dialect table of the provider layer: per wire protocol, what a successful upstream answer is, and
 * for the protocols some upstreams speak natively, the adapter that carries such a call as it came. A
 * new dialect adds its folder under dialects/ and its row here.
 */

/** One dialect's definition of a successful answer (each `null` when the answer is one). */
export interface AnswerRules {
  /** Why a non-streamed answer (parsed JSON, as the upstream sent it) is not a successful one. */
  answerProblem(body: JsonObject): string | null;
  /** Why the first event of a stream does not start an answer. */
  streamStartProblem(event: JsonObject): string | null;
}

export const ANSWER_RULES: Record<WireProtocol, AnswerRules> = {
  chat: { answerProblem: chatAnswerProblem, streamStartProblem: chatStreamStartProblem },
  responses: { answerProblem: responsesAnswerProblem, streamStartProblem: responsesStreamStartProblem },
  messages: { answerProblem: messagesAnswerProblem, streamStartProblem: messagesStreamStartProblem },
  embeddings: { answerProblem: embeddingsAnswerProblem, streamStartProblem: embeddingsStreamStartProblem },
};

/** The adapter of a call made in a dialect the model's upstream speaks natively (`CallOptions.api`). */
export const NATIVE_ADAPTERS: Record<NativeProtocol, ProviderAdapter> = {
  responses: openAiResponses,
  messages: anthropicMessages,
};
