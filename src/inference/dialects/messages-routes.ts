import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import { anthropicResponses } from '../../http/schemas.js';
import { newId } from '../../shared/ids.js';
import type { JsonObject } from '../../shared/json.js';
import { type CallRunner, clientMetadata } from '../call-runner.js';
import type { DialectAnswer } from '../dialect-types.js';
import type { ChatRequest } from '../types.js';
import { type MessageFrame, MessagesStreamEncoder, messageOf } from './messages-answer.js';
import { decodeMessagesRequest } from './messages-request.js';
import { nativeMessages } from './native-calls.js';

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

/** `POST /v1/messages`: Anthropic's Messages API, to any model, on the gateway's one call path. */
export const messagesRoutes: FastifyPluginAsyncTypebox<{ runner: CallRunner }> = async (app, { runner }) => {
  app.post(
    '/v1/messages',
    {
      config: { permission: 'inference:write', dialect: 'anthropic' },
      schema: {
        tags: ['inference'],
        summary: "Create a message (Anthropic's Messages API; streamed with stream: true)",
        description:
          'The key goes in x-api-key or Authorization: Bearer. Translated to the internal call and recorded as a ' +
          "task log like chat completions. Errors are in Anthropic's shape " +
          '({"type":"error","error":{"type":…,"message":…}}) so that its SDK raises its own error classes.',
        body: MessagesRequest,
        response: anthropicResponses({ 200: MessageObject }, 400, 404, 413, 415, 508),
      },
    },
    async (req, reply) => {
      runner.checkHops(req);
      const body = req.body as JsonObject;
      const metadata = clientMetadata(req, body.metadata);
      const request = decodeMessagesRequest(body);
      const where = await runner.prepare(req);
      const id = `msg_${(where.logId ?? newId('log')).slice(4)}`;
      const frame: MessageFrame = { id, model: String(body.model) };
      const answer: DialectAnswer = {
        plain: (completion) => JSON.stringify(messageOf(frame, completion)),
        stream: () => new MessagesStreamEncoder(frame),
      };
      return runner.run(
        req,
        reply,
        {
          route: 'messages',
          request,
          requestText: req.bodyText,
          metadata,
          answer,
          // To an Anthropic upstream the body goes as the client wrote it.
          native: nativeMessages(
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
