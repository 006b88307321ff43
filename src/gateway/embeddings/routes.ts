import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import { principalOf } from '../../auth/guard.js';
import { callTrace } from '../../capture/traceparent.js';
import { openAiResponses } from '../../http/schemas.js';
import { CallCanceller } from '../../llm/cancel.js';
import { EMBEDDINGS } from '../../llm/dialects/embeddings/index.js';
import type { ChatRequest } from '../../llm/types.js';
import { CallAbortedError } from '../../llm/upstream-errors.js';
import { isObject, type JsonObject } from '../../shared/json.js';
import { cacheHeader, cacheMetadata, gatewayCachePolicy } from '../cache-hook.js';
import {
  type CallRunner,
  COST_HEADER,
  callError,
  clientMetadata,
  formatCost,
  LOG_ID_HEADER,
  UPSTREAM_MODEL_HEADER,
} from '../call-runner.js';
import { guardStepOf } from '../guard-step.js';

const Open = { additionalProperties: true } as const;

const EmbeddingsRequest = Type.Object(
  {
    model: Type.String({
      minLength: 1,
      description: 'openai/<name> or a registered OpenAI-compatible model',
    }),
    input: Type.Union([
      Type.String(),
      Type.Array(Type.String(), { minItems: 1 }),
      Type.Array(Type.Integer(), { minItems: 1 }),
      Type.Array(Type.Array(Type.Integer(), { minItems: 1 }), { minItems: 1 }),
    ]),
    encoding_format: Type.Optional(Type.Union([Type.Literal('float'), Type.Literal('base64')])),
    dimensions: Type.Optional(Type.Integer({ minimum: 1 })),
  },
  { ...Open, description: 'An embeddings request; other fields pass on to the upstream' },
);

const EmbeddingsList = Type.Object(
  { object: Type.Literal('list'), data: Type.Array(Type.Unknown()) },
  { ...Open, description: 'The embeddings, as the upstream gave them; the model is the one asked for' },
);

/** The input as the task log keeps every input: one user message per text (token arrays as JSON). */
function inputMessages(input: unknown): JsonObject[] {
  let texts: unknown[];
  if (typeof input === 'string') texts = [input];
  else if (Array.isArray(input) && input.every((x) => typeof x === 'string' || Array.isArray(x)))
    texts = input;
  else texts = [input];
  return texts.map((text) => ({
    role: 'user',
    content: typeof text === 'string' ? text : JSON.stringify(text),
  }));
}

/** The answer as recorded: the vectors left out (their count and size kept), everything else as is. */
function recordedAnswer(body: JsonObject): JsonObject {
  const data = Array.isArray(body.data) ? body.data : [];
  return {
    ...body,
    data: data.map((d: unknown) =>
      isObject(d)
        ? {
            object: d.object ?? 'embedding',
            index: d.index ?? null,
            // A base64 embedding is little-endian float32: 4 bytes a dimension.
            dimensions: Array.isArray(d.embedding)
              ? d.embedding.length
              : typeof d.embedding === 'string'
                ? Math.floor(Buffer.byteLength(d.embedding, 'base64') / 4)
                : null,
          }
        : null,
    ),
  };
}

/** `POST /v1/embeddings`: OpenAI-compatible upstreams, priced by input tokens and recorded. */
export const embeddingsRoutes: FastifyPluginAsyncTypebox<{
  runner: CallRunner;
  /** Whether the process has a response cache (a call's cache headers are then honoured). */
  cached: boolean;
}> = async (app, { runner, cached }) => {
  const { gateway } = runner;
  app.post(
    EMBEDDINGS.routes.call,
    {
      config: { permission: 'inference:write', dialect: EMBEDDINGS },
      schema: {
        tags: ['inference'],
        summary: 'Create embeddings (OpenAI-compatible upstreams)',
        description:
          "Priced by input tokens at the model's input price and recorded as a task log (the texts as user " +
          'messages; the answer without its vectors). Same headers as chat completions.',
        body: EmbeddingsRequest,
        response: openAiResponses({ 200: EmbeddingsList }, 400, 404, 413, 415, 502, 508),
      },
    },
    async (req, reply) => {
      const { projectId, keyId } = principalOf(req);
      const hops = runner.checkHops(req);
      const body = req.body as JsonObject;
      const metadata = clientMetadata(req, body.metadata);
      const { containerId, logId } = await runner.prepare(req);
      if (logId) reply.header(LOG_ID_HEADER, logId);
      const startedAt = Date.now();
      const controller = new CallCanceller();
      reply.raw.once('close', () => {
        if (!reply.raw.writableFinished) controller.abort();
      });
      const { metadata: _own, ...request } = body;
      const context =
        logId && containerId
          ? {
              logId,
              projectId,
              containerId,
              request: { model: String(body.model), messages: [] },
              requestText: req.bodyText,
              startedAt,
              trace: callTrace(req.headers.traceparent),
              operation: EMBEDDINGS.operation,
            }
          : null;
      const model = String(body.model);
      const input = inputMessages(body.input);
      const base: JsonObject = { ...metadata, route: EMBEDDINGS.name, stream: false };
      /** Set when the budget refused the call: nothing was called, nothing is recorded. */
      let refused = false;
      // Guards: the input stage only (an embedding has no answer text to check).
      const guard = await guardStepOf(runner.guards, {
        projectId,
        keyId,
        containerId,
        logId,
        request: { model, messages: input as unknown as ChatRequest['messages'] },
        upstreamBody: request,
        base,
      });
      try {
        await guard?.before(() => controller.abort());
        const resolved = await gateway.model(projectId, model);
        const policy = gatewayCachePolicy(req, resolved);
        const { value: result, outcome } = await runner.caller.embedRequest(resolved, request, {
          payer: { projectId, keyId },
          signal: controller,
          requestText: req.bodyText,
          upstream: { resolveFallback: (slug) => gateway.model(projectId, slug), hops },
          cache: cached ? policy : null,
          refused: async () => {
            refused = true;
          },
        });
        cacheHeader(reply, outcome);
        const answer = { ...result.body, model };
        reply
          .header(COST_HEADER, formatCost(result.cost))
          .header(UPSTREAM_MODEL_HEADER, result.upstreamModel)
          .type('application/json')
          .send(JSON.stringify(answer));
        if (context) {
          gateway.record(context, {
            model,
            output: '',
            input,
            responseText: JSON.stringify(recordedAnswer(answer)),
            usage: result.usage,
            latencyMs: result.latencyMs,
            cost: result.cost,
            error: null,
            metadata: {
              ...base,
              ...cacheMetadata(outcome),
              served_by: result.servedBy,
              attempts: result.attempts,
            },
            guards: guard?.notes() ?? [],
          });
        }
        return reply;
      } catch (thrown) {
        const err = guard ? guard.failure(thrown) : thrown;
        if (refused) throw err;
        if (context) {
          const error = callError(err);
          gateway.record(context, {
            model,
            output: null,
            input,
            usage: null,
            latencyMs: Date.now() - startedAt,
            cost: 0,
            error,
            metadata: base,
            guards: guard?.notes() ?? [],
          });
        }
        if (err instanceof CallAbortedError) {
          reply.hijack();
          reply.raw.destroy();
          return reply;
        }
        reply.header(COST_HEADER, '0');
        throw err;
      } finally {
        guard?.finish();
      }
    },
  );
};
