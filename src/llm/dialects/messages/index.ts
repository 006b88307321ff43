import { anthropicMessages } from '../../providers/anthropic-native.js';
import { NO_CONTINUATION, type WireDialect } from '../types.js';
import { MessagesStreamEncoder, messageOf } from './answer.js';
import { estimateInputTokens } from './count-tokens.js';
import { MESSAGES_EDGE } from './errors.js';
import { nativeMessages } from './native.js';
import { decodeMessagesRequest } from './request.js';
import { messagesAnswerProblem, messagesStreamStartProblem } from './success.js';

/** Anthropic's Messages API: translated to the internal call, or carried natively to Anthropic upstreams. */
export const MESSAGES = {
  name: 'messages',
  routes: { call: '/v1/messages', prefix: '/v1/messages' },
  operation: 'chat',
  ...MESSAGES_EDGE,
  answerRules: { answerProblem: messagesAnswerProblem, streamStartProblem: messagesStreamStartProblem },
  // Anthropic's native calls share the Anthropic adapter's path.
  native: { adapter: anthropicMessages, ownPath: false },
  internal: false,
  conversational: true,
  storesAnswers: false,
  countsTokens: true,
  continuation: NO_CONTINUATION,
  codec: {
    decode: decodeMessagesRequest,
    native: nativeMessages,
    answer: messageOf,
    StreamEncoder: MessagesStreamEncoder,
    estimateInputTokens,
    countTokensPath: '/v1/messages/count_tokens',
  },
} as const satisfies WireDialect<'messages'>;
