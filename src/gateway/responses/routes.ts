import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import { principalOf } from '../../auth/guard.js';
import { grants } from '../../auth/permissions.js';
import type { StoredResponses } from '../../capture/stored-responses.js';
import { setPathDialect } from '../../http/error-handler.js';
import { openAiResponses } from '../../http/schemas.js';
import type { DialectAnswer } from '../../llm/dialect-types.js';
import type { ResponseFrame } from '../../llm/dialects/responses/answer.js';
import { RESPONSES } from '../../llm/dialects/responses/index.js';
import { type PromptHooks, promptUseOf } from '../../prompts/reference.js';
import { ApiError } from '../../shared/errors.js';
import { newId } from '../../shared/ids.js';
import { isObject, type JsonObject } from '../../shared/json.js';
import { type CallRunner, clientMetadata } from '../call-runner.js';

const Open = { additionalProperties: true } as const;

const ResponsesRequest = Type.Object(
  {
    model: Type.String({
      minLength: 1,
      description: 'openai/<name>, anthropic/<name>, or a registered model',
    }),
    input: Type.Union([Type.String(), Type.Array(Type.Unknown())]),
    instructions: Type.Optional(Type.Union([Type.String(), Type.Null()])),
    previous_response_id: Type.Optional(Type.Union([Type.String({ minLength: 1 }), Type.Null()])),
    stream: Type.Optional(Type.Union([Type.Boolean(), Type.Null()])),
    store: Type.Optional(Type.Union([Type.Boolean(), Type.Null()])),
    metadata: Type.Optional(Type.Union([Type.Record(Type.String(), Type.String()), Type.Null()])),
    tools: Type.Optional(Type.Union([Type.Array(Type.Object({ type: Type.String() }, Open)), Type.Null()])),
  },
  { ...Open, description: 'A Responses API request; sampling and reasoning parameters pass on to the model' },
);

const ResponseObject = Type.Object(
  { id: Type.String(), object: Type.Literal('response'), output: Type.Array(Type.Unknown()) },
  {
    ...Open,
    description:
      'A response. With stream: true, the Responses event sequence (response.created … response.completed).',
  },
);

const IdParams = Type.Object({ id: Type.String({ minLength: 1, maxLength: 200 }) });

const InputItemsQuery = Type.Object({
  limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 100, default: 20 })),
  order: Type.Optional(Type.Union([Type.Literal('asc'), Type.Literal('desc')], { default: 'desc' })),
  after: Type.Optional(Type.String({ minLength: 1 })),
});

/** A stored request's `input` as the Responses API lists it: items with ids. */
function inputItems(responseId: string, input: unknown): JsonObject[] {
  const suffix = responseId.slice(5);
  const items: unknown[] =
    typeof input === 'string'
      ? [{ type: 'message', role: 'user', content: [{ type: 'input_text', text: input }] }]
      : Array.isArray(input)
        ? input
        : [];
  return items.filter(isObject).map((item, i) => {
    const type = item.type ?? 'message';
    const content =
      typeof item.content === 'string' ? [{ type: 'input_text', text: item.content }] : item.content;
    const shown: JsonObject = type === 'message' ? { ...item, type, content } : { ...item, type };
    if (typeof shown.id !== 'string') shown.id = `${type === 'message' ? 'msg' : 'item'}_${suffix}_${i}`;
    if (type === 'message' && shown.status === undefined) shown.status = 'completed';
    return shown;
  });
}

/** `POST /v1/responses` and the stored responses: the Responses API on the gateway's one call path. */
export const responsesRoutes: FastifyPluginAsyncTypebox<{
  runner: CallRunner;
  stored: StoredResponses;
  prompts: PromptHooks;
}> = async (app, { runner, stored, prompts }) => {
  // Every error under /v1/responses carries OpenAI's type and param, also before a route is found.
  setPathDialect(app, RESPONSES.routes.prefix, RESPONSES);
  await app.register(createResponseRoute, { runner, stored, prompts });
  await app.register(storedResponseRoutes, { stored });
};

/** `POST /v1/responses`: a call, continuing a stored response when it names one. */
const createResponseRoute: FastifyPluginAsyncTypebox<{
  runner: CallRunner;
  stored: StoredResponses;
  prompts: PromptHooks;
}> = async (app, { runner, stored, prompts }) => {
  app.post(
    RESPONSES.routes.call,
    {
      config: { permission: 'inference:write', dialect: RESPONSES },
      // `prompt: {id, version, variables}` is rendered into the body (input, model, …) before validation.
      preValidation: prompts.responses,
      schema: {
        tags: ['inference'],
        summary: 'Create a response (OpenAI Responses API; streamed with stream: true)',
        description:
          'Translated to the internal call (instructions and input items as messages, function tools, ' +
          'text.format as the response format, reasoning passed on) and recorded as a task log whose id is ' +
          'the response id (resp_X is log_X). previous_response_id continues a stored response; store: false ' +
          'keeps the task log but the response cannot be retrieved. Same headers as chat completions. ' +
          '`prompt: {id, version?, variables?}` names a stored prompt (id or name; version a number or a ' +
          'label): its messages come before `input`, its model and parameters apply unless given.',
        body: ResponsesRequest,
        response: openAiResponses({ 200: ResponseObject }, 400, 404, 413, 415, 502, 508),
      },
    },
    async (req, reply) => {
      const { projectId } = principalOf(req);
      runner.checkHops(req);
      const body = req.body as JsonObject;
      const metadata = clientMetadata(req, body.metadata);
      const history =
        typeof body.previous_response_id === 'string'
          ? (await stored.find(projectId, body.previous_response_id)).conversation()
          : [];
      const request = RESPONSES.codec.decode(body, history);
      const where = await runner.prepare(req);
      const id = where.logId ? RESPONSES.codec.idOf(where.logId) : `resp_${newId('log').slice(4)}`;
      const frame: ResponseFrame = {
        id,
        model: String(body.model),
        createdAt: Math.floor(Date.now() / 1000),
        request: body,
      };
      const answer: DialectAnswer = {
        plain: (completion) => JSON.stringify(RESPONSES.codec.answer(frame, completion)),
        stream: () => new RESPONSES.codec.StreamEncoder(frame),
      };
      return runner.run(
        req,
        reply,
        {
          route: RESPONSES.name,
          request,
          requestText: req.bodyText,
          metadata,
          answer,
          native: RESPONSES.codec.native(RESPONSES.codec.nativeRequest(body, history), frame),
          prompt: promptUseOf(req),
          ...(body.store === false ? { extra: { store: false } } : {}),
        },
        where,
      );
    },
  );
};

/** The stored responses: read, deleted, and their input items listed. */
const storedResponseRoutes: FastifyPluginAsyncTypebox<{ stored: StoredResponses }> = async (
  app,
  { stored },
) => {
  app.get(
    `${RESPONSES.routes.prefix}/:id`,
    {
      config: { permission: 'inference:read', dialect: RESPONSES },
      schema: {
        tags: ['inference'],
        summary: 'Retrieve a stored response',
        params: IdParams,
        response: openAiResponses({ 200: ResponseObject }, 404, 422),
      },
    },
    async (req) => {
      const found = await stored.find(principalOf(req).projectId, req.params.id);
      return found.response();
    },
  );

  app.delete(
    `${RESPONSES.routes.prefix}/:id`,
    {
      config: { permission: 'inference:write', dialect: RESPONSES },
      schema: {
        tags: ['inference'],
        summary: 'Delete a stored response (its task log stays, no longer served as a response)',
        params: IdParams,
        response: openAiResponses(
          {
            200: Type.Object({
              id: Type.String(),
              object: Type.Literal('response'),
              deleted: Type.Boolean(),
            }),
          },
          404,
          413,
          415,
          422,
        ),
      },
    },
    async (req) => {
      const principal = principalOf(req);
      // Deleting a stored response needs what reading it needs too: a key that cannot read them
      // cannot remove them either.
      if (!grants(principal.permissions, 'inference:read')) {
        throw new ApiError('permission_denied', "This API key lacks the 'inference:read' permission", {
          required: 'inference:read',
        });
      }
      await stored.remove(principal.projectId, req.params.id);
      return { id: req.params.id, object: 'response' as const, deleted: true };
    },
  );

  app.get(
    `${RESPONSES.routes.prefix}/:id/input_items`,
    {
      config: { permission: 'inference:read', dialect: RESPONSES },
      schema: {
        tags: ['inference'],
        summary: "A stored response's input items",
        params: IdParams,
        querystring: InputItemsQuery,
        response: openAiResponses(
          {
            200: Type.Object(
              { object: Type.Literal('list'), data: Type.Array(Type.Unknown()), has_more: Type.Boolean() },
              Open,
            ),
          },
          404,
          422,
        ),
      },
    },
    async (req) => {
      const found = await stored.find(principalOf(req).projectId, req.params.id);
      let items = inputItems(found.id, found.request.input);
      if (req.query.order !== 'asc') items = items.reverse();
      if (req.query.after !== undefined) {
        const at = items.findIndex((item) => item.id === req.query.after);
        items = at === -1 ? [] : items.slice(at + 1);
      }
      const limit = req.query.limit ?? 20;
      const data = items.slice(0, limit);
      return {
        object: 'list' as const,
        data,
        first_id: data[0]?.id ?? null,
        last_id: data[data.length - 1]?.id ?? null,
        has_more: items.length > limit,
      };
    },
  );
};
