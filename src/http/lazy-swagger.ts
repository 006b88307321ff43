import { createRequire } from 'node:module';
import type { SwaggerOptions } from '@fastify/swagger';
import type { FastifyInstance, FastifyPluginCallback, RouteOptions } from 'fastify';
import fp from 'fastify-plugin';

/** What @fastify/swagger's dynamic mode asks of the instance it is set up on. */
interface SwaggerHost {
  addHook(name: string, hook: (...args: never[]) => unknown): void;
  decorate(name: string, value: unknown): void;
  getSchemas(): Record<string, unknown>;
}

/** The document builder @fastify/swagger decorates the instance with (`app.swagger()`). */
type BuildDocument = (opts?: { yaml?: boolean }) => unknown;

type SetUpDynamicMode = (host: SwaggerHost, opts: SwaggerOptions, done: () => void) => void;

interface DynamicModeHooks {
  onRoute?: (route: RouteOptions) => void;
  onRegister?: (instance: FastifyInstance) => unknown;
  onReady?: (done: () => void) => void;
}

const loadModule = createRequire(import.meta.url);

/**
 * @fastify/swagger (dynamic mode), with its document builder loaded on the first `app.swagger()` call
 * instead of at registration: the builder requires `yaml`, json-schema-resolver and the OpenAPI helpers,
 * about a tenth of a start's CPU, which only /openapi.json and /docs need.
 *
 * The plugin's own code builds the document: at the first call its dynamic mode is set up on a stand-in
 * for this instance, and is handed what its hooks would have seen — every route (`onRoute`), every
 * instance registered (`onRegister`) and, once the server is ready, `onReady` — in the same order, so the
 * document is the same. Routes and instances that come later are passed on as they come.
 */
function lazySwagger(app: FastifyInstance, options: SwaggerOptions, done: (err?: Error) => void): void {
  const routes: RouteOptions[] = [];
  const instances: FastifyInstance[] = [];
  let ready = false;
  let hooks: DynamicModeHooks | null = null;
  let build: BuildDocument | null = null;
  let readyPassed = false;

  function load(): BuildDocument {
    const found: DynamicModeHooks = {};
    let decorated: BuildDocument | null = null;
    const host: SwaggerHost = {
      addHook: (name, hook) => Object.assign(found, { [name]: hook }),
      decorate: (_name, value) => {
        decorated = value as BuildDocument;
      },
      getSchemas: () => app.getSchemas(),
    };
    const setUp = loadModule('@fastify/swagger/lib/mode/dynamic.js') as SetUpDynamicMode;
    // The plugin's entry module sets the mode on the options it is given.
    setUp(host, { ...options, mode: 'dynamic' } as SwaggerOptions, () => {});
    for (const route of routes.splice(0)) found.onRoute?.(route);
    for (const instance of instances.splice(0)) void found.onRegister?.(instance);
    hooks = found;
    if (!decorated)
      throw new Error('@fastify/swagger did not decorate the instance with its document builder');
    return decorated;
  }

  app.addHook('onRoute', (route) => {
    if (hooks) hooks.onRoute?.(route);
    else routes.push(route);
  });
  app.addHook('onRegister', (instance) => {
    if (hooks) void hooks.onRegister?.(instance);
    else instances.push(instance);
  });
  app.addHook('onReady', (next) => {
    ready = true;
    next();
  });
  app.decorate('swagger', ((opts?: { yaml?: boolean }) => {
    build ??= load();
    if (ready && !readyPassed) {
      readyPassed = true;
      hooks?.onReady?.(() => {});
    }
    return build(opts);
  }) as FastifyInstance['swagger']);
  done();
}

/** Named as @fastify/swagger's plugin, which @fastify/swagger-ui declares as its dependency. */
export const swaggerPlugin: FastifyPluginCallback<SwaggerOptions> = fp(lazySwagger, {
  fastify: '5.x',
  name: '@fastify/swagger',
});
