import type { JsonObject } from '../../shared/json.js';
import type { WireProtocol } from '../../shared/wire-protocol.js';
import { chatAnswerProblem, chatStreamStartProblem } from './chat/success.js';
import { embeddingsAnswerProblem, embeddingsStreamStartProblem } from './embeddings/success.js';
import { messagesAnswerProblem, messagesStreamStartProblem } from './messages/success.js';
import { responsesAnswerProblem, responsesStreamStartProblem } from './responses/success.js';

/*
 * Per wire protocol, what a successful upstream answer is: the provider layer turns anything else into an
 * upstream error, and the response cache keeps nothing else.
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
