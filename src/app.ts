import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import Fastify, { type FastifyInstance, LogController } from 'fastify';
import { createAuthenticator } from './auth/authenticator.js';
import { apiKeyRoutes } from './auth/routes.js';
import { containerRoutes } from './catalog/containers/routes.js';
import type { Config } from './config.js';
import { type DatabaseHandle, openDatabase } from './db/database.js';
import type { Deps } from './deps.js';
import { evaluatorRoutes } from './evaluators/routes.js';
import { installErrorHandling } from './http/error-handler.js';
import { installGuard } from './http/guard.js';
import { healthRoutes } from './http/health.js';
import { installJsonParser } from './http/json-parser.js';
import { installOpenApi } from './http/openapi.js';
import { validatorCompiler } from './http/validation.js';
import type { RateLimiter } from './ratelimit/limiter.js';
import { createMemoryLimiter } from './ratelimit/memory.js';
import { createRedisLimiter } from './ratelimit/redis.js';
import { loadOrCreateSecret } from './shared/secrets.js';

export interface App {
  server: FastifyInstance;
  deps: Deps;
  close(): Promise<void>;
}

async function createLimiter(config: Config): Promise<RateLimiter> {
  const params = { rate: config.rateLimit.perMinute, periodMs: 60_000, burst: config.rateLimit.burst };
  return config.redisUrl ? createRedisLimiter(config.redisUrl, params) : createMemoryLimiter(params);
}

/** The composition root: every backend is chosen here, from the typed config, and nowhere else. */
export async function createApp(config: Config, options: { database?: DatabaseHandle } = {}): Promise<App> {
  const database = options.database ?? (await openDatabase(config.databaseUrl));
  await database.migrate();
  const pepper = config.keyPepper ?? loadOrCreateSecret(config.dataDir, 'key-pepper');
  const limiter = await createLimiter(config);
  const deps: Deps = {
    config,
    database,
    db: database.db,
    pepper,
    limiter,
    auth: createAuthenticator(database.db, pepper, config.keyCacheMs),
  };

  const server = Fastify({
    logger: config.logLevel === 'silent' ? false : { level: config.logLevel },
    bodyLimit: config.bodyLimit,
    requestIdHeader: 'x-request-id',
    // Per-request log lines only at debug level: at info they would dominate the cost of a gateway call.
    logController: new LogController({
      disableRequestLogging: config.logLevel !== 'debug' && config.logLevel !== 'trace',
    }),
    routerOptions: { ignoreTrailingSlash: true, maxParamLength: 500 },
  }).withTypeProvider<TypeBoxTypeProvider>();
  server.setValidatorCompiler(validatorCompiler);
  installErrorHandling(server);
  installJsonParser(server);
  installGuard(server, deps.auth, limiter);
  await installOpenApi(server);
  await server.register(healthRoutes, { deps });
  await server.register(apiKeyRoutes, { deps });
  await server.register(containerRoutes, { deps });
  await server.register(evaluatorRoutes, { deps });
  await server.ready();

  return {
    server,
    deps,
    async close() {
      await server.close();
      await limiter.close();
      if (!options.database) await database.close();
    },
  };
}
