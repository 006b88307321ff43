import { type Static, Type } from 'typebox';
import { Nullable } from '../http/schemas.js';

const Open = { additionalProperties: true } as const;

/**
 * The request body of the widely used chat-completion API. Only the shape the gateway relies on is
 * checked; every other field (tools, response_format, temperature, …) is passed on to the provider.
 */
export const ChatCompletionRequest = Type.Object(
  {
    model: Type.String({
      minLength: 1,
      description: 'openai/<name>, anthropic/<name>, or a registered model',
    }),
    messages: Type.Array(
      Type.Object({ role: Type.String({ minLength: 1 }), content: Type.Optional(Type.Unknown()) }, Open),
      { minItems: 1 },
    ),
    stream: Type.Optional(Nullable(Type.Boolean())),
    stream_options: Type.Optional(
      Nullable(Type.Object({ include_usage: Type.Optional(Nullable(Type.Boolean())) }, Open)),
    ),
  },
  {
    ...Open,
    description: 'Chat completion request; unknown fields are passed to OpenAI-compatible upstreams',
  },
);
export type ChatCompletionRequest = Static<typeof ChatCompletionRequest>;

const Usage = Type.Object(
  {
    prompt_tokens: Type.Integer({ minimum: 0 }),
    completion_tokens: Type.Integer({ minimum: 0 }),
    total_tokens: Type.Integer({ minimum: 0 }),
  },
  Open,
);

/** The response body (non-streamed). With `stream: true` the answer is `text/event-stream` chunks instead. */
export const ChatCompletion = Type.Object(
  {
    id: Type.String(),
    object: Type.String({ description: 'chat.completion' }),
    created: Type.Optional(Type.Integer()),
    model: Type.Optional(Type.String()),
    choices: Type.Array(
      Type.Object(
        {
          index: Type.Integer(),
          message: Type.Object(
            { role: Type.String(), content: Type.Optional(Nullable(Type.String())) },
            Open,
          ),
          finish_reason: Nullable(Type.String()),
        },
        Open,
      ),
    ),
    usage: Type.Optional(Nullable(Usage)),
  },
  {
    ...Open,
    description:
      'A chat completion. Headers: X-Evalgate-Cost (USD), X-Evalgate-Log-Id (when recorded). With stream: true, ' +
      'server-sent chat.completion.chunk events ending with [DONE], X-Evalgate-Cost as a trailer.',
  },
);
