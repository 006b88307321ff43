import { OPENAI_EDGE } from '../openai-edge.js';
import { NO_CONTINUATION, type WireDialect } from '../types.js';
import { embeddingsAnswerProblem, embeddingsStreamStartProblem } from './success.js';

/** OpenAI's embeddings: no conversation, priced by input tokens, never streamed. */
export const EMBEDDINGS = {
  name: 'embeddings',
  routes: { call: '/v1/embeddings', prefix: '/v1/embeddings' },
  operation: 'embeddings',
  ...OPENAI_EDGE,
  answerRules: { answerProblem: embeddingsAnswerProblem, streamStartProblem: embeddingsStreamStartProblem },
  native: null,
  internal: false,
  conversational: false,
  storesAnswers: false,
  countsTokens: false,
  continuation: NO_CONTINUATION,
  codec: {},
} as const satisfies WireDialect<'embeddings'>;
