import { geminiNative } from '../../providers/gemini-native.js';
import { NO_CONTINUATION, type WireDialect } from '../types.js';
import { GeminiStreamEncoder, generateContentOf } from './answer.js';
import { GEMINI_EDGE } from './errors.js';
import { nativeGemini } from './native.js';
import { decodeGeminiRequest } from './request.js';
import { geminiAnswerProblem, geminiStreamStartProblem } from './success.js';

/** The methods of a model resource the dialect serves (`models/{model}:{method}`), and whether each streams. */
const METHODS: Readonly<Record<string, { stream: boolean }>> = {
  generateContent: { stream: false },
  streamGenerateContent: { stream: true },
};

/** `{model}:{method}` (the model may hold slashes) as its parts; null when the method is not served. */
function methodOf(resource: string): { model: string; stream: boolean } | null {
  const cut = resource.lastIndexOf(':');
  if (cut <= 0) return null;
  const method = METHODS[resource.slice(cut + 1)];
  return method ? { model: resource.slice(0, cut), stream: method.stream } : null;
}

/**
 * Google's Gemini API (`models/{model}:generateContent`, `:streamGenerateContent?alt=sse`): translated to
 * the internal call, or carried natively to Gemini upstreams.
 */
export const GEMINI = {
  name: 'gemini',
  // The SDK's default API version is v1 (v1beta where a client asks for it); /v1/models itself is the
  // model registry's, so only /v1beta/models is Gemini's throughout.
  routes: { call: '/v1beta/models/*', also: ['/v1/models/*'], prefix: '/v1beta/models' },
  operation: 'chat',
  ...GEMINI_EDGE,
  answerRules: { answerProblem: geminiAnswerProblem, streamStartProblem: geminiStreamStartProblem },
  // Gemini's native calls share the Gemini adapter's paths.
  native: { adapter: geminiNative, ownPath: false },
  internal: false,
  conversational: true,
  storesAnswers: false,
  countsTokens: false,
  continuation: NO_CONTINUATION,
  codec: {
    methodOf,
    decode: decodeGeminiRequest,
    native: nativeGemini,
    answer: generateContentOf,
    StreamEncoder: GeminiStreamEncoder,
  },
} as const satisfies WireDialect<'gemini'>;
