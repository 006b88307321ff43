import type { FastifyInstance } from 'fastify';
import { Type } from 'typebox';
import { responses } from '../http/schemas.js';
import type { Metrics } from './metrics.js';

/**
 * Records every response in `evalgate_http_request_duration_seconds`. Installed before the OpenAPI
 * plugin, so that its own routes (/openapi.json, /docs) are recorded too.
 */
export function installMetrics(server: FastifyInstance, metrics: Metrics): void {
  // Callback style, not async: this runs on every request, the gateway's included.
  server.addHook('onResponse', (request, reply, done) => {
    metrics.httpRequest(
      request.routeOptions.url ?? 'unmatched',
      request.method,
      reply.statusCode,
      reply.elapsedTime / 1000,
    );
    done();
  });
}

/**
 * Serves `GET /metrics` to keys with `metrics:read`. Metrics are per process, not per tenant: the
 * permission is what protects them. Added after the OpenAPI plugin, which documents only the routes
 * added after it loads.
 */
export function installMetricsRoute(server: FastifyInstance, metrics: Metrics): void {
  server.get(
    '/metrics',
    {
      config: { permission: 'metrics:read' },
      schema: {
        tags: ['metrics'],
        summary: 'Prometheus metrics of this process (text exposition format)',
        description: 'Per process, not per project: any key with the metrics:read permission may read them.',
        response: {
          ...responses({}),
          200: {
            description: 'Prometheus text exposition format 0.0.4',
            content: { 'text/plain': { schema: Type.String() } },
          },
        },
      },
    },
    async (_request, reply) => {
      const { contentType, body } = await metrics.render();
      return reply.type(contentType).send(body);
    },
  );
}
