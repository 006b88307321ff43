import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { principalOf } from '../auth/guard.js';
import { responses } from '../http/schemas.js';
import { installOpenAiValidation } from './errors.js';
import {
  GraderRunBody,
  GraderRunResponse,
  GraderValidateBody,
  GraderValidateResponse,
} from './graders-schemas.js';
import { checkGrader, type GraderApiPorts, runGrader } from './graders-service.js';

const tags = ['openai-evals'];

/**
 * OpenAI's `fine_tuning.alpha.graders` routes. Bodies are checked by the graders' own validation (which
 * names every problem precisely) rather than by the schema compiler, and invalid requests answer 400 as
 * the SDKs expect; the schemas still document the SDK's shapes.
 */
export const graderRoutes: FastifyPluginAsyncTypebox<{ ports: GraderApiPorts }> = async (app, { ports }) => {
  installOpenAiValidation(app);
  app.post(
    '/v1/fine_tuning/alpha/graders/run',
    {
      config: { permission: 'evaluation:write' },
      attachValidation: true,
      schema: {
        tags,
        summary: 'Grade one model sample with a grader (OpenAI graders API)',
        body: GraderRunBody,
        response: responses({ 200: GraderRunResponse }, 404, 413, 415),
      },
    },
    async (req, reply) => {
      const body = (req.body ?? {}) as Record<string, unknown>;
      // A client that leaves before the answer abandons the grade (its computation and model calls).
      const left = new AbortController();
      reply.raw.once('close', () => {
        if (!reply.raw.writableFinished) left.abort();
      });
      if (req.raw.socket?.destroyed) left.abort();
      return runGrader(
        ports,
        principalOf(req),
        { grader: body.grader, model_sample: body.model_sample, item: body.item },
        left.signal,
      );
    },
  );

  app.post(
    '/v1/fine_tuning/alpha/graders/validate',
    {
      config: { permission: 'evaluators:read' },
      attachValidation: true,
      schema: {
        tags,
        summary: 'Check a grader definition (OpenAI graders API)',
        body: GraderValidateBody,
        response: responses({ 200: GraderValidateResponse }, 413, 415),
      },
    },
    async (req) => ({ grader: checkGrader(((req.body ?? {}) as Record<string, unknown>).grader) }),
  );
};
