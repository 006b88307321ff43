import { OPENAI_EDGE } from '../openai-edge.js';
import { NO_CONTINUATION, type WireDialect } from '../types.js';
import { storedChatAnswer } from './answer.js';
import { chatAnswerProblem, chatStreamStartProblem } from './success.js';

/** OpenAI's chat completions: the internal call's own shape, so its requests and answers pass as they are. */
export const CHAT = {
  name: 'chat',
  routes: { call: '/v1/chat/completions', prefix: '/v1/chat/completions' },
  operation: 'chat',
  ...OPENAI_EDGE,
  answerRules: { answerProblem: chatAnswerProblem, streamStartProblem: chatStreamStartProblem },
  native: null,
  internal: true,
  conversational: true,
  storesAnswers: false,
  countsTokens: false,
  continuation: NO_CONTINUATION,
  codec: {
    /** A stored completion's answer, under the id of its task log. */
    storedAnswer: storedChatAnswer,
  },
} as const satisfies WireDialect<'chat'>;
