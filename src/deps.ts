import type { FastifyBaseLogger } from 'fastify';
import type { Kysely } from 'kysely';
import type { Authenticator } from './auth/authenticator.js';
import type { ModelContext } from './catalog/models/resolve.js';
import type { SelfAddresses } from './catalog/models/self-addresses.js';
import type { ResolvedModel } from './catalog/models/types.js';
import type { Config } from './config.js';
import type { DatabaseHandle } from './db/database.js';
import type { Database } from './db/schema.js';
import type { ModelLimiter } from './engine/limiter.js';
import type { EvaluatorSnapshot } from './engine/plan.js';
import type { RunQueue } from './engine/run-queue.js';
import type { ProviderLayer } from './inference/provider-layer.js';
import type { LogWriter } from './inference/recording/types.js';
import type { Metrics } from './observability/metrics.js';
import type { RateLimiter } from './ratelimit/limiter.js';
import type { Scorer } from './scoring/types.js';

/** Where code evaluators run: whether this process can sandbox them, and a scorer for one evaluator. */
export interface Sandbox {
  status(): Promise<{ available: boolean; reason?: string }>;
  createScorer(evaluator: EvaluatorSnapshot): Promise<Scorer>;
}

/** Everything a feature needs, built once by the composition root (`createServices`) and passed down. */
export interface Deps {
  config: Config;
  logger: FastifyBaseLogger;
  /** This process's identity as a worker: `<host>:<pid>:<random>`. */
  workerId: string;
  database: DatabaseHandle;
  db: Kysely<Database>;
  auth: Authenticator;
  /** Requests per API key (GCRA; Redis-backed when EVALGATE_REDIS_URL is set). */
  limiter: RateLimiter;
  /** The secret mixed into API key hashes. */
  pepper: string;
  /** This deployment's hop id (`hopIdOf(pepper)`): sent upstream in X-Evalgate-Hop, refused when it comes back. */
  hopId: string;
  /** 32-byte master key sealing stored credentials (registered models' api_key). */
  secretKey: Buffer;
  /** The one model-resolution context: registry, operator providers, credential key. */
  models: ModelContext;
  resolveModel(projectId: string, ref: string): Promise<ResolvedModel>;
  /** The ports this process's HTTP server listens on (filled by the app once it listens). */
  self: SelfAddresses;
  /** The process's one task log writer (batched, off the request path). */
  logWriter: LogWriter;
  /** Calls any resolved model (the gateway route, judges and generation); records nothing itself. */
  providers: ProviderLayer;
  /** Where runs are submitted and cancelled. */
  queue: RunQueue;
  /** Per-model concurrency, RPM/TPM and 429 pauses of runs' calls (shared by workers in scale-out). */
  modelLimiter: ModelLimiter;
  sandbox: Sandbox;
  /** The process's Prometheus metrics (per process, not per tenant). */
  metrics: Metrics;
  /** Closes everything, the database last. */
  close(): Promise<void>;
}
