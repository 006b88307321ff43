import { isObject, parseJson } from '../../../shared/json.js';
import { openAiResponses } from '../../providers/openai-responses.js';
import { OPENAI_EDGE } from '../openai-edge.js';
import type { Continuation, WireDialect } from '../types.js';
import { logIdOf, ResponsesStreamEncoder, responseIdOf, responseOf } from './answer.js';
import { nativeResponses } from './native.js';
import { decodeResponsesRequest, nativeResponsesRequest } from './request.js';
import { responsesAnswerProblem, responsesStreamStartProblem } from './success.js';

/** The response a request continues (`previous_response_id`) and its conversation, when it names them. */
function continuation(requestText: string): Continuation | null {
  // Most requests name neither: they are not parsed again.
  if (!/"(previous_response_id|conversation)"/.test(requestText)) return null;
  const parsed = parseJson<unknown>(requestText, {});
  const request = isObject(parsed) ? parsed : {};
  const previous = request.previous_response_id;
  const conversation = request.conversation;
  return {
    previousLog:
      typeof previous === 'string' && previous.startsWith('resp_') ? `log_${previous.slice(5)}` : null,
    conversation:
      typeof conversation === 'string'
        ? conversation
        : isObject(conversation) && typeof conversation.id === 'string'
          ? conversation.id
          : null,
  };
}

/** OpenAI's Responses API: translated to the internal call, or carried natively to upstreams that speak it. */
export const RESPONSES = {
  name: 'responses',
  routes: { call: '/v1/responses', prefix: '/v1/responses' },
  operation: 'chat',
  ...OPENAI_EDGE,
  answerRules: { answerProblem: responsesAnswerProblem, streamStartProblem: responsesStreamStartProblem },
  native: { adapter: openAiResponses, ownPath: true },
  internal: false,
  conversational: true,
  storesAnswers: true,
  countsTokens: false,
  continuation,
  codec: {
    decode: decodeResponsesRequest,
    nativeRequest: nativeResponsesRequest,
    native: nativeResponses,
    answer: responseOf,
    StreamEncoder: ResponsesStreamEncoder,
    idOf: responseIdOf,
    logIdOf,
  },
} as const satisfies WireDialect<'responses'>;
