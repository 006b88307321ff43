import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import { principalOf } from '../../auth/guard.js';
import { setPathDialect } from '../../http/error-handler.js';
import { anthropicResponses } from '../../http/schemas.js';
import type { DialectAnswer } from '../../llm/dialect-types.js';
import type { MessageFrame } from '../../llm/dialects/messages/answer.js';
import { MESSAGES } from '../../llm/dialects/messages/index.js';
import type { ProviderLayer } from '../../llm/provider-layer.js';
import type { ChatRequest } from '../../llm/types.js';
import { newId } from '../../shared/ids.js';
import type { JsonObject } from '../../shared/json.js';
import { type CallRunner, clientMetadata } from '../call-runner.js';

const Open = { additionalProperties: true } as const;

const MessagesRequest = Type.Object(
  {
    model: Type.String({
      minLength: 1,
      description: 'anthropic/<name>, openai/<name>, or a registered model',
    }),
    max_tokens: Type.Integer({ minimum: 1 }),
    messages: Type.Array(
      Type.Object(
        { role: Type.String(), content: Type.Union([Type.String(), Type.Array(Type.Unknown())]) },
        Open,
      ),
      { minItems: 1 },
    ),
    system: Type.Optional(Type.Union([Type.String(), Type.Array(Type.Unknown())])),
    stop_sequences: Type.Optional(Type.Array(Type.String())),
    stream: Type.Optional(Type.Boolean()),
    tools: Type.Optional(Type.Array(Type.Object({ name: Type.String({ minLength: 1 }) }, Open))),
    metadata: Type.Optional(Type.Object({}, Open)),
  },
  { ...Open, description: 'An Anthropic Messages request; other parameters (temperature, top_p, …) pass on' },
);

const MessageObject = Type.Object(
  { id: Type.String(), type: Type.Literal('message'), content: Type.Array(Type.Unknown()) },
  {
    ...Open,
    description: "A message. With stream: true, Anthropic's events (message_start … message_stop).",
  },
);

const CountTokensRequest = Type.Object(
  {
    model: MessagesRequest.properties.model,
    messages: MessagesRequest.properties.messages,
    system: MessagesRequest.properties.system,
    tools: MessagesRequest.properties.tools,
  },
  {
    ...Open,
    description: 'A Messages request without max_tokens; other fields (tool_choice, thinking, …) pass on',
  },
);

const TokenCount = Type.Object(
  { input_tokens: Type.Integer({ minimum: 0 }) },
  { additionalProperties: false, description: 'The input tokens of the request' },
);

/** Says whether a token count is the upstream's (`upstream`) or the gateway's estimate (`estimate`). */
export const TOKEN_COUNT_HEADER = 'X-Evalgate-Token-Count';

/**
 * `POST /v1/messages`: Anthropic's Messages API, to any model, on the gateway's one call path; and
 * `POST /v1/messages/count_tokens`, the upstream's count for Anthropic models, an estimate for others.
 */
export const messagesRoutes: FastifyPluginAsyncTypebox<{
  runner: CallRunner;
  providers: ProviderLayer;
}> = async (app, { runner, providers }) => {
  setPathDialect(app, MESSAGES.routes.prefix, MESSAGES);
  app.post(
    MESSAGES.codec.countTokensPath,
    {
      config: { permission: 'inference:write', dialect: MESSAGES },
      schema: {
        tags: ['inference'],
        summary: "Count a message's input tokens (Anthropic's Messages API)",
        description:
          'Free and not recorded. For an Anthropic model, the upstream counts them; for any other model the ' +
          'gateway estimates them with the o200k_base tokenizer (the text of system, messages and tools, plus ' +
          `3 tokens per message and 3 for the reply). ${TOKEN_COUNT_HEADER} says which: upstream or estimate. ` +
          "Errors are in Anthropic's shape.",
        body: CountTokensRequest,
        response: anthropicResponses({ 200: TokenCount }, 400, 404, 413, 415, 502, 508),
      },
    },
    async (req, reply) => {
      const hops = runner.checkHops(req);
      const body = req.body as JsonObject;
      const model = await runner.gateway.model(principalOf(req).projectId, String(body.model));
      if (model.provider === 'anthropic') {
        const tokens = await providers.countTokens(model, body, { hops });
        return reply.header(TOKEN_COUNT_HEADER, 'upstream').send({ input_tokens: tokens });
      }
      const tokens = await MESSAGES.codec.estimateInputTokens(body);
      return reply.header(TOKEN_COUNT_HEADER, 'estimate').send({ input_tokens: tokens });
    },
  );

  app.post(
    MESSAGES.routes.call,
    {
      config: { permission: 'inference:write', dialect: MESSAGES },
      schema: {
        tags: ['inference'],
        summary: "Create a message (Anthropic's Messages API; streamed with stream: true)",
        description:
          'The key goes in x-api-key or Authorization: Bearer. Translated to the internal call and recorded as a ' +
          "task log like chat completions. Errors are in Anthropic's shape " +
          '({"type":"error","error":{"type":…,"message":…}}) so that its SDK raises its own error classes.',
        body: MessagesRequest,
        response: anthropicResponses({ 200: MessageObject }, 400, 404, 413, 415, 502, 508),
      },
    },
    async (req, reply) => {
      runner.checkHops(req);
      const body = req.body as JsonObject;
      const metadata = clientMetadata(req, body.metadata);
      const request = MESSAGES.codec.decode(body);
      const where = await runner.prepare(req);
      const id = `msg_${(where.logId ?? newId('log')).slice(4)}`;
      const frame: MessageFrame = { id, model: String(body.model) };
      const answer: DialectAnswer = {
        plain: (completion) => JSON.stringify(MESSAGES.codec.answer(frame, completion)),
        stream: () => new MESSAGES.codec.StreamEncoder(frame),
      };
      return runner.run(
        req,
        reply,
        {
          route: MESSAGES.name,
          request,
          requestText: req.bodyText,
          metadata,
          answer,
          // To an Anthropic upstream the body goes as the client wrote it.
          native: MESSAGES.codec.native(
            { ...body, model: String(body.model) } as ChatRequest,
            id,
            String(body.model),
          ),
        },
        where,
      );
    },
  );
};
