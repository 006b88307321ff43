import { randomUUID } from 'node:crypto';
import type { Server } from 'node:http';
import type { Socket } from 'node:net';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import Fastify, { type FastifyInstance, LogController } from 'fastify';
import { createAuthenticator } from './auth/authenticator.js';
import { installGuard } from './auth/guard.js';
import { apiKeyRoutes } from './auth/routes.js';
import { containerRoutes } from './catalog/containers/routes.js';
import { datasetRoutes } from './catalog/datasets/routes.js';
import { logRoutes } from './catalog/logs/routes.js';
import { decodeSecretKey } from './catalog/models/crypto.js';
import { priceTable } from './catalog/models/prices.js';
import { modelRoutes } from './catalog/models/routes.js';
import type { Config } from './config.js';
import { type DatabaseHandle, openDatabase } from './db/database.js';
import type { Deps } from './deps.js';
import { createRunner } from './engine/compose.js';
import { evaluatorRoutes } from './evaluators/routes.js';
import { frameworkErrorHandler, installErrorHandling } from './http/error-handler.js';
import { healthRoutes } from './http/health.js';
import { installJsonParser } from './http/json-parser.js';
import { installOpenApi } from './http/openapi.js';
import { validatorCompiler } from './http/validation.js';
import { createProviders } from './inference/compose.js';
import { createThreadedLogWriter } from './inference/recording/threaded-writer.js';
import { createLogWriter } from './inference/recording/writer.js';
import { inferenceRoutes } from './inference/routes.js';
import type { RateLimiter } from './ratelimit/limiter.js';
import { createMemoryLimiter } from './ratelimit/memory.js';
import { createRedisLimiter } from './ratelimit/redis.js';
import { runRoutes } from './runs/routes.js';
import { loadOrCreateSecret } from './shared/secrets.js';

export interface App {
  server: FastifyInstance;
  deps: Deps;
  close(): Promise<void>;
}

/** Requests in progress get this long to finish when the server closes; then their connections are cut. */
const SHUTDOWN_GRACE_MS = 30_000;

/**
 * Open connections, so that closing does not wait on clients that connected and never sent a byte
 * (HTTP clients open spare connections): those are cut at once, the others after SHUTDOWN_GRACE_MS.
 */
function trackConnections(http: Server) {
  const open = new Set<Socket>();
  http.on('connection', (socket: Socket) => {
    open.add(socket);
    socket.once('close', () => open.delete(socket));
  });
  return {
    async closing(closed: Promise<void>): Promise<void> {
      for (const socket of open) if (socket.bytesRead === 0) socket.destroy();
      const timer = setTimeout(() => http.closeAllConnections(), SHUTDOWN_GRACE_MS);
      timer.unref();
      try {
        await closed;
      } finally {
        clearTimeout(timer);
      }
    },
  };
}

async function createLimiter(config: Config): Promise<RateLimiter> {
  const params = { rate: config.rateLimit.perMinute, periodMs: 60_000, burst: config.rateLimit.burst };
  return config.redisUrl ? createRedisLimiter(config.redisUrl, params) : createMemoryLimiter(params);
}

/** The composition root: every backend is chosen here, from the typed config, and nowhere else. */
export async function createApp(config: Config, options: { database?: DatabaseHandle } = {}): Promise<App> {
  // An operator's own price table is read first, so that a broken file stops the start, not every call.
  if (config.pricesFile) priceTable(config.pricesFile);
  const database = options.database ?? (await openDatabase(config.databaseUrl));
  await database.migrate();
  const pepper = config.keyPepper ?? loadOrCreateSecret(config.dataDir, 'key-pepper');
  const limiter = await createLimiter(config);
  const secretKey = config.secretKey ?? decodeSecretKey(loadOrCreateSecret(config.dataDir, 'secret-key'));
  // An in-memory SQLite database exists only for its own connection: its writer cannot have another.
  const logWriter =
    config.logWriter.thread && config.databaseUrl !== 'sqlite::memory:'
      ? createThreadedLogWriter(config.databaseUrl, config.logWriter, (message) => server.log.warn(message))
      : createLogWriter(database.db, config.logWriter);
  const providers = createProviders(config, { db: database.db, config, secretKey });
  const deps: Deps = {
    config,
    database,
    db: database.db,
    pepper,
    limiter,
    auth: createAuthenticator(database.db, pepper, config.keyCacheMs),
    secretKey,
    logWriter,
    providers,
  };

  const server = Fastify({
    logger: config.logLevel === 'silent' ? false : { level: config.logLevel },
    bodyLimit: config.bodyLimit,
    // A caller's X-Request-Id is kept when it is a plausible id; anything else gets a fresh one.
    requestIdHeader: false,
    genReqId: (req) => {
      const given = req.headers['x-request-id'];
      return typeof given === 'string' && /^[\w.:-]{1,128}$/.test(given) ? given : randomUUID();
    },
    // Per-request log lines only at debug level: at info they would dominate the cost of a gateway call.
    logController: new LogController({
      disableRequestLogging: config.logLevel !== 'debug' && config.logLevel !== 'trace',
    }),
    routerOptions: { ignoreTrailingSlash: true, maxParamLength: 500 },
    frameworkErrors: frameworkErrorHandler,
  }).withTypeProvider<TypeBoxTypeProvider>();
  server.setValidatorCompiler(validatorCompiler);
  installErrorHandling(server);
  installJsonParser(server);
  installGuard(server, deps.auth, limiter);
  await installOpenApi(server);
  await server.register(healthRoutes, { deps });
  await server.register(apiKeyRoutes, { deps });
  await server.register(containerRoutes, { deps });
  await server.register(logRoutes, { deps });
  await server.register(datasetRoutes, { deps });
  await server.register(modelRoutes, { deps });
  await server.register(evaluatorRoutes, { deps });
  await server.register(inferenceRoutes, { deps });
  const runs = createRunner(deps, (msg) => server.log.warn(msg));
  await server.register(runRoutes, { ctx: runs.context });
  await server.ready();
  const connections = trackConnections(server.server);
  // Runs left queued or running by a previous process continue where they stopped.
  await runs.runner.start(runs.resumable);

  return {
    server,
    deps,
    async close() {
      await connections.closing(server.close());
      await runs.runner.close();
      await providers.close();
      // After the server (no new calls), before the database: what is buffered gets written.
      await logWriter.close();
      await limiter.close();
      if (!options.database) await database.close();
    },
  };
}
