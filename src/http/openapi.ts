import type { FastifyInstance, FastifyPluginCallback } from 'fastify';
import fp from 'fastify-plugin';
import { swaggerPlugin } from './lazy-swagger.js';
import { finishDocument, type OpenApiDocument, openApiPath } from './openapi-document.js';
import { ErrorEnvelope } from './schemas.js';

export const API_VERSION = '1.0.0';

const DESCRIPTION = [
  'Evaluation gateway. Resources: evaluators, evaluation runs (with their samples, comparisons and events),',
  'containers, task logs, datasets, models, API keys, the OpenAI-compatible chat completions gateway,',
  'Prometheus metrics and the health check (/healthz).',
  'Authenticate with Authorization: Bearer <API_KEY> (every route except /healthz). Routes that need a key',
  'answer X-RateLimit-Limit, X-RateLimit-Remaining and X-RateLimit-Reset, and Retry-After on 429.',
].join(' ');

/** Methods on which Fastify reads a request body, whether or not the route declares one. */
const BODY_METHODS = new Set(['POST', 'PUT', 'PATCH', 'DELETE']);

/**
 * Any route on a body method that declares its responses declares 413 (body too large) and 415 (not JSON)
 * too, in the envelope: documented, and serialized by the same schema.
 */
export function installBodyErrorResponses(app: FastifyInstance): void {
  app.addHook('onRoute', (route) => {
    const response = route.schema?.response as Record<string, unknown> | undefined;
    if (!response || ![route.method].flat().some((m) => BODY_METHODS.has(m))) return;
    route.schema = { ...route.schema, response: { 413: ErrorEnvelope, 415: ErrorEnvelope, ...response } };
  });
}

/** OpenAPI 3.1 from the route schemas, served at /openapi.json, with a browsable page at /docs. */
export async function installOpenApi(app: FastifyInstance): Promise<void> {
  // Any route on those methods can answer 413 (body too large) and 415 (not JSON): documented here for
  // all of them. Added before the swagger plugin's own hook, so that the document sees it.
  const keyed = new Set<string>();
  app.addHook('onRoute', (route) => {
    // Routes that name a permission need a key, and so answer the rate-limit headers (src/auth/guard.ts).
    if (route.config?.permission)
      for (const m of [route.method].flat()) keyed.add(`${m.toLowerCase()} ${openApiPath(route.url)}`);
  });
  installBodyErrorResponses(app);
  await app.register(swaggerPlugin, {
    openapi: {
      openapi: '3.1.0',
      info: {
        title: 'Evalgate',
        version: API_VERSION,
        description: DESCRIPTION,
      },
      components: { securitySchemes: { bearer: { type: 'http', scheme: 'bearer' } } },
      security: [{ bearer: [] }],
    },
    transformObject: (doc) =>
      finishDocument((doc as { openapiObject: OpenApiDocument }).openapiObject, keyed),
  });
  app.get('/openapi.json', { schema: { hide: true } }, async () => app.swagger());
}

/** Where the browsable page of the document is served (`installDocsPage`). */
export const DOCS_PREFIX = '/docs';

/**
 * The browsable page of `source`'s document under /docs (@fastify/swagger-ui, with its assets), on `app`:
 * an instance of its own, made on the first request under /docs (src/http/lazy-prefix.ts), so that the
 * page's modules (yaml among them) load then and not at start.
 */
export async function installDocsPage(app: FastifyInstance, source: FastifyInstance): Promise<void> {
  const { default: swaggerUi } = await import('@fastify/swagger-ui');
  // The page's plugin requires @fastify/swagger's, for the document: here, the source's.
  const sourceDocument: FastifyPluginCallback = (instance, _options, done) => {
    instance.decorate('swagger', ((opts?: { yaml?: boolean }) =>
      source.swagger(opts as { yaml: true })) as FastifyInstance['swagger']);
    done();
  };
  await app.register(fp(sourceDocument, { fastify: '5.x', name: '@fastify/swagger' }));
  await app.register(swaggerUi, { routePrefix: DOCS_PREFIX, uiConfig: { url: '/openapi.json' } });
}
