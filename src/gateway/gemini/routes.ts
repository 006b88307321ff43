import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { type TSchema, Type } from 'typebox';
import { setPathDialect } from '../../http/error-handler.js';
import { GUARDED } from '../../http/schemas.js';
import type { DialectAnswer } from '../../llm/dialect-types.js';
import type { GeminiFrame } from '../../llm/dialects/gemini/answer.js';
import { GEMINI } from '../../llm/dialects/gemini/index.js';
import { ApiError } from '../../shared/errors.js';
import { newId } from '../../shared/ids.js';
import type { JsonObject } from '../../shared/json.js';
import { type CallRunner, clientMetadata } from '../call-runner.js';

const Open = { additionalProperties: true } as const;

const Part = Type.Object({}, { ...Open, description: 'text, inlineData, functionCall or functionResponse' });

const GenerateContentRequest = Type.Object(
  {
    contents: Type.Array(Type.Object({ role: Type.Optional(Type.String()), parts: Type.Array(Part) }, Open), {
      minItems: 1,
    }),
    systemInstruction: Type.Optional(
      Type.Union([Type.String(), Type.Object({ parts: Type.Array(Part) }, Open)]),
    ),
    generationConfig: Type.Optional(Type.Object({}, Open)),
    tools: Type.Optional(Type.Array(Type.Object({}, Open))),
    toolConfig: Type.Optional(Type.Object({}, Open)),
    labels: Type.Optional(Type.Record(Type.String(), Type.String())),
  },
  {
    ...Open,
    description:
      'A Gemini generateContent request: contents, systemInstruction, generationConfig (temperature, topP, ' +
      'maxOutputTokens, stopSequences, responseMimeType with responseSchema or responseJsonSchema), tools ' +
      '(functionDeclarations) and toolConfig',
  },
);

const GenerateContentResponse = Type.Object(
  { candidates: Type.Array(Type.Unknown()), responseId: Type.String() },
  {
    ...Open,
    description: 'A GenerateContentResponse. Streamed (alt=sse): one per event, usage on the last.',
  },
);

const GoogleError = Type.Object(
  {
    error: Type.Object(
      {
        code: Type.Integer(),
        message: Type.String(),
        status: Type.String(),
        details: Type.Array(Type.Unknown()),
      },
      Open,
    ),
  },
  { description: "An error in Google's shape (details[0].reason: the service's error code)" },
);

function googleResponses(success: Record<number, TSchema>, ...statuses: number[]): Record<number, TSchema> {
  const out: Record<number, TSchema> = { ...success };
  for (const s of new Set([...GUARDED, ...statuses])) if (s !== 422) out[s] = GoogleError;
  return out;
}

type GeminiApp = Parameters<FastifyPluginAsyncTypebox>[0];

/**
 * `POST /v1beta/models/{model}:generateContent` and `:streamGenerateContent?alt=sse` (and the same under
 * /v1, the SDK's default version): Google's Gemini API, to any model, on the gateway's one call path (the model may be a slug with a slash, e.g. openai/gpt-4o).
 */
export const geminiRoutes: FastifyPluginAsyncTypebox<{ runner: CallRunner }> = async (app, { runner }) => {
  setPathDialect(app, GEMINI.routes.prefix, GEMINI);
  for (const path of [GEMINI.routes.call, ...GEMINI.routes.also]) generateContentRoute(app, path, runner);
};

/** The generateContent route at one path (its API version's). */
function generateContentRoute(app: GeminiApp, path: string, runner: CallRunner): void {
  app.post(
    path,
    {
      config: { permission: 'inference:write', dialect: GEMINI },
      schema: {
        tags: ['inference'],
        summary: "Generate content (Google's Gemini API; streamed by :streamGenerateContent?alt=sse)",
        description:
          'The path is models/{model}:generateContent or models/{model}:streamGenerateContent, the model a slug ' +
          '(openai/<name>, anthropic/<name>, gemini/<name>) or a registered model. The key goes in x-goog-api-key (as ' +
          "Google's SDK sends it) or Authorization: Bearer. Translated to the internal call and recorded as a " +
          'task log like chat completions, with the same headers; to a Gemini model (gemini/<name>, or a ' +
          "registered model of provider gemini) the body goes as it is. Errors are in Google's shape " +
          '({"error":{"code":…,"message":…,"status":…}}).',
        params: Type.Object({ '*': Type.String() }),
        querystring: Type.Object({ alt: Type.Optional(Type.String()) }, Open),
        body: GenerateContentRequest,
        response: googleResponses({ 200: GenerateContentResponse }, 400, 404, 413, 415, 502, 508),
      },
    },
    async (req, reply) => {
      const target = GEMINI.codec.methodOf(req.params['*']);
      if (!target) {
        throw new ApiError(
          'not_found',
          `Method not found: ${req.params['*']} (generateContent or streamGenerateContent)`,
        );
      }
      if (target.stream && req.query.alt !== 'sse') {
        throw new ApiError(
          'bad_request',
          'streamGenerateContent is served as server-sent events only: add alt=sse',
        );
      }
      runner.checkHops(req);
      const body = req.body as JsonObject;
      const metadata = clientMetadata(req, body.labels);
      const request = GEMINI.codec.decode(body, target.model, target.stream);
      const where = await runner.prepare(req);
      const frame: GeminiFrame = { id: where.logId ?? newId('log'), model: target.model };
      const answer: DialectAnswer = {
        plain: (completion) => JSON.stringify(GEMINI.codec.answer(frame, completion)),
        stream: () => new GEMINI.codec.StreamEncoder(frame),
      };
      return runner.run(
        req,
        reply,
        {
          route: GEMINI.name,
          request,
          requestText: req.bodyText,
          metadata,
          answer,
          // To a Gemini upstream the body goes as the client wrote it.
          native: GEMINI.codec.native(body, frame),
        },
        where,
      );
    },
  );
}
