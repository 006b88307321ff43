import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import type { Deps } from '../deps.js';

const Health = Type.Object({ ok: Type.Boolean() }, { additionalProperties: false });

/** For load balancers and uptime monitors: 200 while the database answers, 503 otherwise. */
export const healthRoutes: FastifyPluginAsyncTypebox<{ deps: Deps }> = async (app, { deps }) => {
  app.get(
    '/healthz',
    {
      schema: {
        tags: ['health'],
        summary: 'Health check',
        security: [],
        response: { 200: Health, 503: Health },
      },
    },
    async (_req, reply) => {
      try {
        await deps.database.ping();
        return { ok: true };
      } catch {
        return reply.code(503).send({ ok: false });
      }
    },
  );
};
