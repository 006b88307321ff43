import { randomBytes } from 'node:crypto';
import { hostname } from 'node:os';
import type { FastifyBaseLogger } from 'fastify';
import type { Kysely } from 'kysely';
import { pino } from 'pino';
import { createAuthenticator } from './auth/authenticator.js';
import { createBudgets } from './budgets/compose.js';
import type { Config } from './config.js';
import { type DatabaseHandle, openDatabase } from './db/database.js';
import type { Database } from './db/schema.js';
import { createScorerRegistry, type ScorerRegistry } from './engine/scorers/registry.js';
import { InlineRunQueue } from './executor/inline-queue.js';
import type { RunQueue } from './executor/run-queue.js';
import { ResponseCache } from './llm/cache/cache.js';
import { type CacheStore, createRedisCacheStore, createSqlCacheStore } from './llm/cache/store.js';
import { createProviders } from './llm/compose.js';
import { checkUpstreamUrlResolved } from './llm/egress/policy.js';
import { SelfAddresses } from './llm/egress/self-addresses.js';
import { hopIdOf } from './llm/hop.js';
import { priceTable } from './llm/models/prices.js';
import { type ModelContext, resolveModel } from './llm/models/resolve.js';
import type { ResolvedModel } from './llm/models/types.js';
import { AlertWatcher } from './monitors/alerts.js';
import { MonitorSelector } from './monitors/selector.js';
import { monitorSeries } from './monitors/series.js';
import { createMetrics } from './observability/metrics.js';
import { buildPorts, type Parts, type Ports, type Sandbox } from './ports.js';
import { perMinuteParams, type RateLimiter } from './ratelimit/limiter.js';
import { createMemoryLimiter } from './ratelimit/memory.js';
import type { ModelLimiter } from './ratelimit/model-limiter.js';
import { createMemoryModelLimiter } from './ratelimit/model-limiter-memory.js';
import { createRedisLimiter } from './ratelimit/redis.js';
import { createRecording } from './recording.js';
import { RemoteSandbox } from './scoring/code/remote.js';
import {
  type CodeRuntime,
  codeScorerOptions,
  createCodeRuntime,
  createCodeScorer,
  sandboxStatus,
} from './scoring/code/scorer.js';
import { decodeSecretKey } from './shared/crypto.js';
import { keyPepper, loadOrCreateSecret } from './shared/secrets.js';
import { createSourceRegistry, type SourceRegistry } from './sources/registry.js';
import { OtlpInflight } from './traces/otlp/inflight.js';

/**
 * What a process of `evalgate serve --workers N` shares with the others through the primary (declared
 * here, by what it is used for; `cluster/link.ts` implements it).
 */
export interface ClusterPort {
  rateLimiter(): RateLimiter;
  publishForget(keyId: string): void;
  onForget(fn: (keyId: string) => void): void;
}

/**
 * What the API (`createApp`) and the executor (`createWorker`) are built from, once per process: each
 * feature gets its own port (`ports`); the parts themselves are for the wiring (app, CLI, tests).
 */
export interface Services extends Parts {
  db: Kysely<Database>;
  /** 32-byte master key sealing stored credentials (registered models' api_key). */
  secretKey: Buffer;
  ports: Ports;
  /** Closes everything, the database last. */
  close(): Promise<void>;
}

export interface ServicesOptions {
  /** Reuse an open database (tests that share one between two app instances). */
  database?: DatabaseHandle;
  logger?: FastifyBaseLogger;
  /** Set in a worker of `evalgate serve --workers N`: rate limits and revocations shared with the others. */
  cluster?: ClusterPort;
  /** The kinds of data source runs may read (default: the built-in ones); a test adds one here. */
  sourceKinds?: SourceRegistry;
  /** The kinds of scorer evaluators may be (default: the built-in ones); a test adds one here. */
  scorerKinds?: ScorerRegistry;
}

function createRateLimiter(
  config: Config,
  warn: (message: string) => void,
  cluster: ClusterPort | undefined,
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
  // With Redis, every process of the deployment (either executor: both spread one run over processes)
  // shares the limits; without it each process holds them for itself.
  if (!config.redisUrl) return createMemoryModelLimiter();
  const { createRedisModelLimiter } = await import('./ratelimit/model-limiter-redis.js');
  try {
    return await createRedisModelLimiter({
      url: config.redisUrl,
      workerId,
      prefix: `${config.redisPrefix}:limits`,
      warn,
    });
  } catch (err) {
    // The queues of the scale-out executor live in Redis: without it there is nothing to run. The inline
    // executor runs on; each process then holds the model limits for itself, as without Redis.
    if (config.runs.executor === 'bullmq') throw err;
    const reason = err instanceof Error ? err.message : String(err);
    warn(`Redis is unavailable for the model limits (${reason}): each process holds them for itself`);
    return createMemoryModelLimiter();
  }
}

/** Entries in the database embedded; shared by every process through Redis in scale-out. */
async function createCacheStore(
  config: Config,
  database: DatabaseHandle,
  warn: (message: string) => void,
): Promise<CacheStore> {
  if (!config.redisUrl) return createSqlCacheStore(database.db, warn);
  return createRedisCacheStore(config.redisUrl, config.redisPrefix, warn);
}

async function createRunQueue(config: Config, database: DatabaseHandle): Promise<RunQueue> {
  if (config.runs.executor === 'inline') return new InlineRunQueue(database.db);
  // Loaded only here, so that the embedded mode never imports BullMQ.
  const { BullRunQueue } = await import('./executor/bullmq-queue.js');
  return BullRunQueue.connect(
    config.redisUrl ?? '',
    config.redisPrefix,
    config.runs.environments,
    database.db,
    config.runs.submitTimeoutMs,
  );
}

/**
 * Where this process's code evaluators run: in its own sandbox, or on the sandbox runner named by
 * EVALGATE_SANDBOX_URL (a deployment whose containers may not create namespaces).
 */
function createSandbox(config: Config, runtime: CodeRuntime): { port: Sandbox; close(): Promise<void> } {
  const code = { ...codeScorerOptions(config), runtime };
  const remote = config.codeEvaluators.remote;
  if (remote) {
    const runner = new RemoteSandbox({ ...remote, limits: code.sandbox.limits, timeoutMs: code.timeoutMs });
    return {
      port: {
        status: () => runner.status(),
        createScorer: (ev) =>
          runner.createScorer({ id: ev.id, source: ev.source ?? '', requirements: ev.requirements }),
        check: (input) => runner.check(input),
      },
      close: () => runner.close(),
    };
  }
  return {
    port: {
      // Without a sandbox, code evaluators run only when the operator opted into rlimits alone.
      async status() {
        const status = await sandboxStatus(config, runtime);
        return status.available || config.codeEvaluators.unsafe ? { available: true } : status;
      },
      createScorer: (ev) =>
        createCodeScorer(code, { id: ev.id, source: ev.source ?? '', requirements: ev.requirements }),
    },
    close: async () => {},
  };
}

/**
 * The composition root: every backend is chosen here, from the typed config, and nowhere else. The
 * database (migrated), model resolution, providers, the task log writer, the run queue, the model
 * limiter, the sandbox, rate limits and metrics.
 */
export async function createServices(config: Config, options: ServicesOptions = {}): Promise<Services> {
  // The price table is read first, so that a broken operator's file stops the start, not every call.
  const prices = priceTable(config.pricesFile);
  const logger = options.logger ?? pino({ level: config.logLevel === 'silent' ? 'silent' : config.logLevel });
  const database = options.database ?? (await openDatabase(config.databaseUrl));
  await database.migrate();
  const workerId = `${hostname()}:${process.pid}:${randomBytes(4).toString('hex')}`;
  const pepper = keyPepper(config);
  const hopId = hopIdOf(pepper);
  const secretKey = config.secretKey ?? decodeSecretKey(loadOrCreateSecret(config.dataDir, 'secret-key'));
  const models: ModelContext = { db: database.db, config, secretKey, prices };
  const warn = (message: string) => logger.warn(message);
  const rateLimiter = await createRateLimiter(config, warn, options.cluster);
  // Monitors select from each batch the log writer has committed (the selector exists once the queue does).
  let selector: MonitorSelector | null = null;
  const { logWriter, otelExport, traces, spanStore } = await createRecording(
    config,
    database,
    models,
    warn,
    (logs) => selector?.committed(logs),
  );
  // Filled by the app once it listens: the gateway never connects to itself.
  const self = new SelfAddresses();
  const providers = createProviders(config, models, { self, hopId });
  const cache = new ResponseCache(await createCacheStore(config, database, warn));
  const queue = await createRunQueue(config, database);
  selector = new MonitorSelector({
    db: database.db,
    queue,
    chunkSize: config.runs.chunkSize,
    catchUpMs: config.runs.reconcileMs,
    warn,
  });
  selector.start();
  const modelLimiter = await createModelLimiter(config, workerId, warn);
  const metrics = createMetrics();
  metrics.setLogWriter(() => logWriter.stats());
  metrics.setSpanLane(() => logWriter.spans.stats());
  const otlpInflight = new OtlpInflight(config.otlpIngest.maxInflightBytes);
  metrics.setOtlpInflight(() => otlpInflight.counts());
  metrics.setQueueDepth(() => queue.depth());
  metrics.setMonitors(() => monitorSeries(database.db));
  if (otelExport) metrics.setOtelExport(() => otelExport.counts());
  // Every process watches the alert rules; a guarded state change makes one of them send each webhook.
  const alerts = new AlertWatcher({
    db: database.db,
    checkUrl: (url) => checkUpstreamUrlResolved(url, config.upstreamPolicy, undefined, self),
    warn,
  });
  alerts.start();
  // The code evaluators' pool, venv cache, probes and Python look-ups: this process's, closed with it.
  const codeRuntime = createCodeRuntime(codeScorerOptions(config));
  const sandbox = createSandbox(config, codeRuntime);
  let closed = false;
  const auth = createAuthenticator(database.db, pepper, config.keyCacheMs);
  const budgets = await createBudgets(config, database.db, { cluster: Boolean(options.cluster), warn });
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

  const parts: Parts = {
    config,
    logger,
    workerId,
    database,
    pepper,
    hopId,
    models,
    resolveModel: (projectId: string, ref: string): Promise<ResolvedModel> =>
      resolveModel(models, projectId, ref),
    self,
    limiter: rateLimiter,
    auth,
    budgets,
    logWriter,
    traces,
    otlpInflight,
    providers,
    cache,
    queue,
    modelLimiter,
    metrics,
    otelExport,
    sourceKinds: options.sourceKinds ?? createSourceRegistry(),
    scorerKinds: options.scorerKinds ?? createScorerRegistry(),
    sandbox: sandbox.port,
  };

  return {
    ...parts,
    db: database.db,
    secretKey,
    ports: buildPorts(parts),
    async close() {
      if (closed) return;
      closed = true;
      await modelLimiter.close();
      await providers.close();
      await cache.close();
      await budgets.close();
      // After the callers (no new calls), before the database: what is buffered gets written (the span
      // lane first, then the task logs), and the monitors' selections from it handed to the queue before
      // it closes. The processor shuts its sinks down (the OTLP export's with them).
      await traces.close();
      await logWriter.close();
      await spanStore?.close();
      selector?.stop();
      await selector?.idle();
      await alerts.close();
      await queue.close();
      await rateLimiter.close();
      codeRuntime.close();
      await sandbox.close();
      if (!options.database) await database.close();
    },
  };
}
