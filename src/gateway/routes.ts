import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { createStoredResponses } from '../capture/stored-responses.js';
import { openAiResponses } from '../http/schemas.js';
import { CHAT } from '../llm/dialects/chat/index.js';
import type { ChatRequest } from '../llm/types.js';
import { promptHooks, promptUseOf } from '../prompts/reference.js';
import { clientMetadata, createCallRunner, type InferencePorts } from './call-runner.js';
import { createGateway } from './containers.js';
import { embeddingsRoutes } from './embeddings/routes.js';
import { geminiRoutes } from './gemini/routes.js';
import { messagesRoutes } from './messages/routes.js';
import { responsesRoutes } from './responses/routes.js';
import { ChatCompletion, ChatCompletionRequest } from './schemas.js';

export type { InferencePorts } from './call-runner.js';
export { CONTAINER_HEADER, COST_HEADER, FALLBACK_HEADER, formatCost, LOG_ID_HEADER } from './call-runner.js';

/**
 * The gateway's routes, one per client dialect (chat completions, Responses, Anthropic Messages,
 * embeddings, Gemini), all on one call path (`createCallRunner`) and recorded as task logs of one shape.
 */
export const inferenceRoutes: FastifyPluginAsyncTypebox<{ ports: InferencePorts }> = async (
  app,
  { ports },
) => {
  const gateway = createGateway(ports.gateway);
  const runner = createCallRunner(ports, gateway);
  const stored = createStoredResponses(ports.gateway.db, ports.gateway.logWriter);
  const prompts = promptHooks(ports.gateway.db);

  app.post(
    CHAT.routes.call,
    {
      config: { permission: 'inference:write', dialect: CHAT },
      // A stored prompt (`prompt` field or X-Evalgate-Prompt) is rendered into the body before validation.
      preValidation: prompts.chat,
      schema: {
        tags: ['inference'],
        summary: 'Create a chat completion (OpenAI-compatible; streamed with stream: true)',
        description:
          'Routes the call to the model named by `model` (openai/<name>, anthropic/<name> or a registered ' +
          'model) and records it as a task log of the container named by X-Evalgate-Container (id or ' +
          "label; default: the project's `default` container), with the request's `metadata` and the " +
          'X-Evalgate-Metadata header (a JSON object). X-Evalgate-Fallback-Models: comma-separated ' +
          'slugs tried when the model is unavailable. Every answer carries X-Evalgate-Cost (USD; a trailer ' +
          'for streams), X-Evalgate-Log-Id (when recorded) and X-Evalgate-Upstream-Model. Upstream requests ' +
          'carry X-Evalgate-Hop (the Evalgate deployments they passed through); a request that already ' +
          'passed through this one is a loop and answers 508 loop_detected. An invalid request answers 400 ' +
          'with every problem in the message and details.issues. A stored prompt can stand for (or precede) ' +
          'the messages: `prompt: {name | id, label?, version?, variables?}` or X-Evalgate-Prompt: name@label ' +
          '(then model may be omitted when the version names one); see docs/prompts.md.',
        body: ChatCompletionRequest,
        response: openAiResponses({ 200: ChatCompletion }, 400, 404, 413, 415, 502, 508),
      },
    },
    async (req, reply) => {
      runner.checkHops(req);
      const request = req.body as ChatRequest;
      const metadata = clientMetadata(req, request.metadata);
      const where = await runner.prepare(req);
      const store = request.store === true;
      return runner.run(
        req,
        reply,
        {
          route: CHAT.name,
          request,
          requestText: req.bodyText,
          metadata,
          // Stored completions answer under their own id (chatcmpl-X for log_X); others pass as they came.
          answer: store && where.logId ? CHAT.codec.storedAnswer(where.logId) : null,
          extra: { store },
          prompt: promptUseOf(req),
        },
        where,
      );
    },
  );

  await app.register(responsesRoutes, { runner, stored, prompts });
  await app.register(messagesRoutes, { runner, providers: ports.providers });
  await app.register(embeddingsRoutes, { runner, cached: ports.cache !== undefined });
  await app.register(geminiRoutes, { runner });
};
