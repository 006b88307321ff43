import type { FastifyInstance } from 'fastify';
import { Type } from 'typebox';
import { responses } from '../http/schemas.js';
import type { Metrics } from './metrics.js';

/** The OpenAPI plugin's name, as fastify-plugin registers it. */
const OPENAPI_PLUGIN = '@fastify/swagger';

/**
 * Records every response in `evalgate_http_request_duration_seconds` and serves `GET /metrics` to keys
 * with `metrics:read`. Metrics are per process, not per tenant: the permission is what protects them.
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

  whenDocumented(server, () => {
    server.get(
      '/metrics',
      {
        config: { permission: 'metrics:read' },
        schema: {
          tags: ['metrics'],
          summary: 'Prometheus metrics of this process (text exposition format)',
          description:
            'Per process, not per project: any key with the metrics:read permission may read them.',
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
  });
}

/**
 * @fastify/swagger documents only the routes added after it loads, and createApp installs metrics before
 * the OpenAPI plugin: then the route is added along with the first route that follows the plugin (its
 * own /openapi.json at the latest). Without that plugin, the start fails rather than lose the route.
 */
function whenDocumented(server: FastifyInstance, addRoute: () => void): void {
  if (server.hasPlugin(OPENAPI_PLUGIN)) {
    addRoute();
    return;
  }
  let added = false;
  server.addHook('onRoute', () => {
    if (added || !server.hasPlugin(OPENAPI_PLUGIN)) return;
    added = true;
    addRoute();
  });
  server.addHook('onReady', (done) => {
    done(added ? undefined : new Error('GET /metrics was not added: no route follows the OpenAPI plugin'));
  });
}
