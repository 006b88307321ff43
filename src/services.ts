import { randomBytes } from 'node:crypto';
import { hostname } from 'node:os';
import type { FastifyBaseLogger } from 'fastify';
import { pino } from 'pino';
import { createAuthenticator } from './auth/authenticator.js';
import { decodeSecretKey } from './catalog/models/crypto.js';
import { priceTable } from './catalog/models/prices.js';
import { type ModelContext, resolveModel } from './catalog/models/resolve.js';
import { SelfAddresses } from './catalog/models/self-addresses.js';
import type { ResolvedModel } from './catalog/models/types.js';
import type { ClusterLink } from './cluster/link.js';
import type { Config } from './config.js';
import { type DatabaseHandle, openDatabase } from './db/database.js';
import type { Deps } from './deps.js';
import type { ModelLimiter } from './engine/limiter.js';
import { createMemoryModelLimiter } from './engine/limiter-memory.js';
import type { RunQueue } from './engine/run-queue.js';
import { InlineRunQueue } from './executor/inline-queue.js';
import { createProviders } from './inference/compose.js';
import { hopIdOf } from './inference/hop.js';
import { createThreadedLogWriter } from './inference/recording/threaded-writer.js';
import type { LogWriter } from './inference/recording/types.js';
import { createLogWriter } from './inference/recording/writer.js';
import { createMetrics } from './observability/metrics.js';
import { perMinuteParams, type RateLimiter } from './ratelimit/limiter.js';
import { createMemoryLimiter } from './ratelimit/memory.js';
import { createRedisLimiter } from './ratelimit/redis.js';
import { codeScorerOptions, createCodeScorer, sandboxStatus } from './scoring/code/scorer.js';
import { loadOrCreateSecret } from './shared/secrets.js';

/** Everything the API (`createApp`) and the executor (`createWorker`) share, built once per process. */
export type Services = Deps;

export interface ServicesOptions {
  /** Reuse an open database (tests that share one between two app instances). */
  database?: DatabaseHandle;
  logger?: FastifyBaseLogger;
  /** Set in a worker of `evalgate serve --workers N`: rate limits and revocations shared with the others. */
  cluster?: ClusterLink;
}

function createRateLimiter(
  config: Config,
  warn: (message: string) => void,
  cluster: ClusterLink | undefined,
): Promise<RateLimiter> | RateLimiter {
  const params = perMinuteParams(config.rateLimit);
  // Without Redis, the workers of one server share the budget held in the primary's memory.
  if (!config.redisUrl) return cluster ? cluster.rateLimiter() : createMemoryLimiter(params);
  return createRedisLimiter(config.redisUrl, params, {
    prefix: `${config.redisPrefix}:rl:`,
    onRedisError: config.rateLimit.onRedisError,
    warn,
  });
}

async function createModelLimiter(
  config: Config,
  workerId: string,
  warn: (message: string) => void,
): Promise<ModelLimiter> {
  // Only the scale-out executor spreads one run over processes; then the limits must be shared too.
  if (config.runs.executor !== 'bullmq' || !config.redisUrl) return createMemoryModelLimiter();
  const { createRedisModelLimiter } = await import('./engine/limiter-redis.js');
  return createRedisModelLimiter({
    url: config.redisUrl,
    workerId,
    prefix: `${config.redisPrefix}:limits`,
    warn,
  });
}

async function createRunQueue(config: Config, database: DatabaseHandle): Promise<RunQueue> {
  if (config.runs.executor === 'inline') return new InlineRunQueue(database.db);
  // Loaded only here, so that the embedded mode never imports BullMQ.
  const { BullRunQueue } = await import('./executor/bullmq-queue.js');
  return BullRunQueue.connect(config.redisUrl ?? '', config.redisPrefix, config.runs.environments);
}

/**
 * The composition root: every backend is chosen here, from the typed config, and nowhere else. The
 * database (migrated), model resolution, providers, the task log writer, the run queue, the model
 * limiter, the sandbox, rate limits and metrics.
 */
export async function createServices(config: Config, options: ServicesOptions = {}): Promise<Services> {
  // An operator's own price table is read first, so that a broken file stops the start, not every call.
  if (config.pricesFile) priceTable(config.pricesFile);
  const logger = options.logger ?? pino({ level: config.logLevel === 'silent' ? 'silent' : config.logLevel });
  const database = options.database ?? (await openDatabase(config.databaseUrl));
  await database.migrate();
  const workerId = `${hostname()}:${process.pid}:${randomBytes(4).toString('hex')}`;
  const pepper = config.keyPepper ?? loadOrCreateSecret(config.dataDir, 'key-pepper');
  const hopId = hopIdOf(pepper);
  const secretKey = config.secretKey ?? decodeSecretKey(loadOrCreateSecret(config.dataDir, 'secret-key'));
  const models: ModelContext = { db: database.db, config, secretKey };
  const warn = (message: string) => logger.warn(message);
  const rateLimiter = await createRateLimiter(config, warn, options.cluster);
  // An in-memory SQLite database exists only for its own connection: its writer cannot have another.
  const logWriter: LogWriter =
    config.logWriter.thread && config.databaseUrl !== 'sqlite::memory:'
      ? createThreadedLogWriter(config.databaseUrl, config.logWriter, warn)
      : createLogWriter(database.db, { ...config.logWriter, warn });
  // Filled by the app once it listens: the gateway never connects to itself.
  const self = new SelfAddresses();
  const providers = createProviders(config, models, { self, hopId });
  const queue = await createRunQueue(config, database);
  const modelLimiter = await createModelLimiter(config, workerId, warn);
  const metrics = createMetrics();
  metrics.setLogWriter(() => logWriter.stats());
  metrics.setQueueDepth(() => queue.depth());
  const code = codeScorerOptions(config);
  let closed = false;
  const auth = createAuthenticator(database.db, pepper, config.keyCacheMs);
  const cluster = options.cluster;
  if (cluster) {
    // A key revoked through one worker is refused by every worker at once, not after keyCacheMs.
    const forgetHere = auth.forget.bind(auth);
    cluster.onForget(forgetHere);
    auth.forget = (keyId) => {
      forgetHere(keyId);
      cluster.publishForget(keyId);
    };
  }

  return {
    config,
    logger,
    workerId,
    database,
    db: database.db,
    pepper,
    hopId,
    secretKey,
    models,
    resolveModel: (projectId: string, ref: string): Promise<ResolvedModel> =>
      resolveModel(models, projectId, ref),
    self,
    limiter: rateLimiter,
    auth,
    logWriter,
    providers,
    queue,
    modelLimiter,
    metrics,
    sandbox: {
      // Without a sandbox, code evaluators run only when the operator opted into rlimits alone.
      async status() {
        const status = await sandboxStatus(config);
        return status.available || config.codeEvaluators.unsafe ? { available: true } : status;
      },
      createScorer: (ev) =>
        createCodeScorer(code, { id: ev.id, source: ev.source ?? '', requirements: ev.requirements }),
    },
    async close() {
      if (closed) return;
      closed = true;
      await queue.close();
      await modelLimiter.close();
      await providers.close();
      // After the callers (no new calls), before the database: what is buffered gets written.
      await logWriter.close();
      await rateLimiter.close();
      if (!options.database) await database.close();
    },
  };
}
