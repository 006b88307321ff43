import path from 'node:path';
import { databaseUrl } from './config-database.js';
import { withFileSettings } from './config-files.js';
import { type OtelExportSettings, otelExportSettings } from './config-otel.js';
import {
  adminEmailOf,
  type CodeEvaluatorSettings,
  ConfigError,
  codeEvaluatorSettings,
  type DashboardSettings,
  type Env,
  int,
  isLoopbackHost,
  oidcProvidersOf,
  type Providers,
  providerSettings,
  publicUrlOf,
  type RequestSettings,
  requestSettings,
  text,
  type UpstreamConfig,
  type UpstreamPolicySettings,
} from './config-sections.js';
import { type OtlpIngestSettings, otlpIngestSettings } from './config-traces.js';
import { decodeSecretKey } from './shared/crypto.js';

export {
  type CodeEvaluatorSettings,
  ConfigError,
  type DashboardSettings,
  type Env,
  isLoopbackHost,
  type OidcProviderSettings,
  type ProviderSettings,
  type RequestSettings,
  type UpstreamConfig,
  type UpstreamPolicySettings,
} from './config-sections.js';

/** Every setting of the service, parsed once at start from `EVALGATE_*` variables and CLI flags. */
export interface Config {
  host: string;
  port: number;
  /** Directory for the embedded database and generated secrets. */
  dataDir: string;
  /** `sqlite:<file>` (default, under dataDir) or `postgres://…`. */
  databaseUrl: string;
  redisUrl: string | null;
  /** Every Redis key and channel of this deployment starts with it (`EVALGATE_REDIS_PREFIX`). */
  redisPrefix: string;
  /** Server-side secret mixed into API key hashes; generated into dataDir when unset. */
  keyPepper: string | null;
  /**
   * Requests per minute per API key, and the burst allowed on top of the steady rate. `onRedisError`
   * (`EVALGATE_RATE_LIMIT_ON_REDIS_ERROR`): while Redis is unreachable, `open` limits with each
   * process's own budget, `closed` refuses requests with 503.
   */
  rateLimit: { perMinute: number; burst: number; onRedisError: 'open' | 'closed' };
  logLevel: 'fatal' | 'error' | 'warn' | 'info' | 'debug' | 'trace' | 'silent';
  bodyLimit: number; // largest accepted JSON request body, in bytes
  /** How long requests may take to arrive, and how many one key or one process holds at once. */
  requests: RequestSettings;
  /** How long a verified API key is trusted without a database look-up, in milliseconds. */
  keyCacheMs: number;
  /** Python interpreter used to check code evaluators. */
  python: string;
  /** How evaluation runs execute. */
  runs: RunSettings;
  /** How the gateway talks to upstream model providers (one connection pool per origin). */
  upstream: UpstreamConfig;
  /** Whether gateway calls are recorded as task logs (`EVALGATE_RECORDING=0` turns it off). */
  recording: boolean;
  /** Days spans received over OTLP are kept (`EVALGATE_TRACE_RETENTION_DAYS`; 0: kept for ever). */
  traceRetentionDays: number;
  /** Bounds on one OTLP export request (`EVALGATE_OTLP_*`), and its wait for the trace store. */
  otlpIngest: OtlpIngestSettings;
  /** Days task logs are kept (`EVALGATE_LOG_RETENTION_DAYS`; 0: kept for ever). */
  logRetentionDays: number;
  /** How much of a session one read returns (`EVALGATE_SESSION_MAX_TURNS`, `EVALGATE_SESSION_MAX_BYTES`). */
  sessionLimits: { maxTurns: number; maxBytes: number };
  /** How long a resolved model (registry look-up) is reused by the gateway, in milliseconds. */
  modelCacheMs: number;
  /** How long a project's budgets are reused without a database look-up, in milliseconds. */
  budgetCacheMs: number;
  /** Frontier providers, enabled by the operator's credentials; those go only to these base URLs. */
  providers: Providers;
  /** 32-byte master key for credentials stored in the database; generated into dataDir when unset. */
  secretKey: Buffer | null;
  /** Which upstream addresses registered models may point at. */
  upstreamPolicy: UpstreamPolicySettings;
  /** Batching of the task log writer. */
  /** The task log writer; `thread`: on a worker thread with its own connection (not for in-memory SQLite). */
  logWriter: { batchSize: number; flushMs: number; maxBuffered: number; thread: boolean; spool: boolean };
  /** Largest streamed upload (JSON-lines datasets and task log imports), in bytes. */
  uploadLimit: number;
  /** A price table that replaces the bundled data/prices.json. */
  pricesFile: string | null;
  /** Code evaluators: workers, the bubblewrap sandbox and requirement installs. */
  codeEvaluators: CodeEvaluatorSettings;
  /** The web dashboard: sign-in providers, the URL users reach it at, session lifetime. */
  dashboard: DashboardSettings;
  /** OTLP export of the gateway's calls and scores (the standard `OTEL_*` variables); null: off. */
  otel: OtelExportSettings | null;
}

export interface RunSettings {
  /** Environment names runs may target (`environment`, default `main`). */
  environments: string[];
  /** Judge and generation calls in flight per model. */
  modelConcurrency: number;
  /** Positions per chunk of work. */
  chunkSize: number;
  /** `inline`: `serve` (and `evalgate worker`) execute runs from the database; `bullmq`: queues on Redis. */
  executor: 'inline' | 'bullmq';
  /** Chunks one process executes at once (`evalgate worker --concurrency` overrides it). */
  workerConcurrency: number;
  /** A chunk claimed (or a BullMQ job locked) by a process that stops beating is taken over after this. */
  leaseMs: number;
  /** How often an idle inline executor looks for work, in milliseconds. */
  pollMs: number;
  /** `EVALGATE_RUN_RECONCILE_MS`: how often BullMQ executors look for live runs whose jobs Redis lost. */
  reconcileMs: number;
  /** `EVALGATE_RUN_SUBMIT_TIMEOUT_MS`: how long creating a run waits on the run queue before answering 503. */
  submitTimeoutMs: number;
  /** Whether `serve` executes runs itself (inline executor only). */
  serveExecutes: boolean;
  /** How long a run waits on 429s without any call succeeding before recording the rest as `rate_limited`. */
  rateLimitWaitMs: number;
  /** An evaluator's scorer (a code evaluator's Python workers) unused this long is closed. */
  scorerIdleMs: number;
}

const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const;

function environmentsOf(raw: string | undefined): string[] {
  const names = (text(raw) ?? 'main')
    .split(',')
    .map((n) => n.trim())
    .filter(Boolean);
  for (const n of names) {
    if (!/^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$/.test(n)) {
      throw new ConfigError(`EVALGATE_ENVIRONMENTS entries must be letters, digits, _ or -, got "${n}"`);
    }
  }
  return names.includes('main') ? names : ['main', ...names];
}

function redisPrefixOf(raw: string | undefined): string {
  const value = text(raw) ?? 'evalgate';
  if (!/^[A-Za-z0-9_-]{1,64}$/.test(value)) {
    throw new ConfigError(`EVALGATE_REDIS_PREFIX must be 1-64 letters, digits, _ or -, got "${value}"`);
  }
  return value;
}

function onRedisErrorOf(raw: string | undefined): 'open' | 'closed' {
  const value = text(raw) ?? 'open';
  if (value !== 'open' && value !== 'closed') {
    throw new ConfigError(`EVALGATE_RATE_LIMIT_ON_REDIS_ERROR must be open or closed, got "${value}"`);
  }
  return value;
}

function executorOf(raw: string | undefined, redisUrl: string | null): 'inline' | 'bullmq' {
  const value = text(raw) ?? 'inline';
  if (value !== 'inline' && value !== 'bullmq') {
    throw new ConfigError(`EVALGATE_EXECUTOR must be inline or bullmq, got "${value}"`);
  }
  if (value === 'bullmq' && redisUrl === null) {
    throw new ConfigError('EVALGATE_EXECUTOR=bullmq needs EVALGATE_REDIS_URL (the queues live in Redis)');
  }
  return value;
}

function secretKey(raw: string | undefined): Buffer | null {
  const value = text(raw);
  if (value === null) return null;
  try {
    return decodeSecretKey(value);
  } catch (err) {
    throw new ConfigError(`EVALGATE_SECRET_KEY: ${(err as Error).message}`);
  }
}

function hostList(raw: string | undefined): string[] | null {
  const value = text(raw);
  if (value === null) return null;
  return value
    .split(',')
    .map((h) => h.trim().toLowerCase().replace(/\.$/, ''))
    .filter((h) => h !== '');
}

/** How runs are executed: the executor, chunks, leases and their timings. */
function runSettings(
  env: Env,
  redisUrl: string | null,
  modelConcurrency: number,
  chunkSize: number,
): Config['runs'] {
  return {
    environments: environmentsOf(env.EVALGATE_ENVIRONMENTS),
    modelConcurrency,
    chunkSize,
    executor: executorOf(env.EVALGATE_EXECUTOR, redisUrl),
    // Enough chunks to keep every model slot busy, plus two so the next ones are ready when one ends.
    workerConcurrency: int(
      'EVALGATE_WORKER_CONCURRENCY',
      env.EVALGATE_WORKER_CONCURRENCY,
      Math.ceil(modelConcurrency / chunkSize) + 2,
      1,
      4096,
    ),
    leaseMs: int('EVALGATE_RUN_LEASE_MS', env.EVALGATE_RUN_LEASE_MS, 30_000, 1000, 3_600_000),
    pollMs: int('EVALGATE_RUN_POLL_MS', env.EVALGATE_RUN_POLL_MS, 500, 10, 60_000),
    reconcileMs: int('EVALGATE_RUN_RECONCILE_MS', env.EVALGATE_RUN_RECONCILE_MS, 5_000, 100, 3_600_000),
    submitTimeoutMs: int(
      'EVALGATE_RUN_SUBMIT_TIMEOUT_MS',
      env.EVALGATE_RUN_SUBMIT_TIMEOUT_MS,
      3000,
      100,
      60_000,
    ),
    serveExecutes: int('EVALGATE_SERVE_EXECUTES', env.EVALGATE_SERVE_EXECUTES, 1, 0, 1) === 1,
    rateLimitWaitMs: int(
      'EVALGATE_RATE_LIMIT_MAX_WAIT_MS',
      env.EVALGATE_RATE_LIMIT_MAX_WAIT_MS,
      600_000,
      100,
      86_400_000,
    ),
    scorerIdleMs: int('EVALGATE_SCORER_IDLE_MS', env.EVALGATE_SCORER_IDLE_MS, 10_000, 10, 3_600_000),
  };
}

/** The upstream connection pools, their timeouts and the retry policy. */
function upstreamSettings(env: Env): Config['upstream'] {
  return {
    connections: int('EVALGATE_UPSTREAM_CONNECTIONS', env.EVALGATE_UPSTREAM_CONNECTIONS, 256, 1, 65_536),
    maxConnections: int(
      'EVALGATE_UPSTREAM_MAX_CONNECTIONS',
      env.EVALGATE_UPSTREAM_MAX_CONNECTIONS,
      1024,
      1,
      1_048_576,
    ),
    connectTimeoutMs: int(
      'EVALGATE_UPSTREAM_CONNECT_TIMEOUT_MS',
      env.EVALGATE_UPSTREAM_CONNECT_TIMEOUT_MS,
      10_000,
      1,
      600_000,
    ),
    headersTimeoutMs: int(
      'EVALGATE_UPSTREAM_HEADERS_TIMEOUT_MS',
      env.EVALGATE_UPSTREAM_HEADERS_TIMEOUT_MS,
      600_000,
      1,
      3_600_000,
    ),
    bodyTimeoutMs: int(
      'EVALGATE_UPSTREAM_BODY_TIMEOUT_MS',
      env.EVALGATE_UPSTREAM_BODY_TIMEOUT_MS,
      300_000,
      1,
      3_600_000,
    ),
    keepAliveMs: int(
      'EVALGATE_UPSTREAM_KEEPALIVE_MS',
      env.EVALGATE_UPSTREAM_KEEPALIVE_MS,
      60_000,
      1,
      3_600_000,
    ),
    retries: int('EVALGATE_UPSTREAM_RETRIES', env.EVALGATE_UPSTREAM_RETRIES, 2, 0, 10),
    retryBaseMs: int('EVALGATE_UPSTREAM_RETRY_BASE_MS', env.EVALGATE_UPSTREAM_RETRY_BASE_MS, 200, 0, 60_000),
    retryMaxMs: int('EVALGATE_UPSTREAM_RETRY_MAX_MS', env.EVALGATE_UPSTREAM_RETRY_MAX_MS, 5_000, 0, 600_000),
  };
}

export interface ConfigFlags {
  host?: string;
  port?: string;
  dataDir?: string;
  databaseUrl?: string;
}

export function loadConfig(given: Env = process.env, flags: ConfigFlags = {}): Config {
  const env = withFileSettings(given);
  const dataDir = path.resolve(flags.dataDir ?? text(env.EVALGATE_DATA_DIR) ?? '.evalgate');
  const redisUrl = text(env.EVALGATE_REDIS_URL);
  if (redisUrl !== null && !/^rediss?:\/\//.test(redisUrl)) {
    throw new ConfigError(`EVALGATE_REDIS_URL must start with redis:// or rediss://, got "${redisUrl}"`);
  }
  const modelConcurrency = int('EVALGATE_MODEL_CONCURRENCY', env.EVALGATE_MODEL_CONCURRENCY, 32, 1, 4096);
  const chunkSize = int('EVALGATE_RUN_CHUNK_SIZE', env.EVALGATE_RUN_CHUNK_SIZE, 64, 1, 100_000);
  const logLevel = text(env.EVALGATE_LOG_LEVEL) ?? 'info';
  if (!(LOG_LEVELS as readonly string[]).includes(logLevel)) {
    throw new ConfigError(`EVALGATE_LOG_LEVEL must be one of ${LOG_LEVELS.join(', ')}, got "${logLevel}"`);
  }
  const pepper = text(env.EVALGATE_KEY_PEPPER);
  if (pepper !== null && pepper.length < 16) {
    throw new ConfigError('EVALGATE_KEY_PEPPER must be at least 16 characters long');
  }
  const perMinute = int(
    'EVALGATE_RATE_LIMIT_PER_MINUTE',
    env.EVALGATE_RATE_LIMIT_PER_MINUTE,
    6000,
    1,
    10_000_000,
  );
  const host = flags.host ?? text(env.EVALGATE_HOST) ?? '127.0.0.1';
  const bodyLimit = int('EVALGATE_BODY_LIMIT', env.EVALGATE_BODY_LIMIT, 10 * 1024 * 1024, 1024, 1024 ** 3);
  return {
    host,
    port: int('port', flags.port ?? env.EVALGATE_PORT, 8080, 0, 65535),
    dataDir,
    databaseUrl: databaseUrl(
      flags.databaseUrl ?? text(env.EVALGATE_DATABASE_URL),
      dataDir,
      text(env.EVALGATE_DATABASE_PASSWORD),
    ),
    redisUrl,
    redisPrefix: redisPrefixOf(env.EVALGATE_REDIS_PREFIX),
    keyPepper: pepper,
    rateLimit: {
      perMinute,
      burst: int('EVALGATE_RATE_LIMIT_BURST', env.EVALGATE_RATE_LIMIT_BURST, perMinute, 1, 10_000_000),
      onRedisError: onRedisErrorOf(env.EVALGATE_RATE_LIMIT_ON_REDIS_ERROR),
    },
    logLevel: logLevel as Config['logLevel'],
    bodyLimit,
    requests: requestSettings(env),
    keyCacheMs: int('EVALGATE_KEY_CACHE_MS', env.EVALGATE_KEY_CACHE_MS, 10_000, 0, 3_600_000),
    budgetCacheMs: int('EVALGATE_BUDGET_CACHE_MS', env.EVALGATE_BUDGET_CACHE_MS, 1_000, 0, 600_000),
    python: text(env.EVALGATE_PYTHON) ?? 'python3',
    runs: runSettings(env, redisUrl, modelConcurrency, chunkSize),
    upstream: upstreamSettings(env),
    recording: int('EVALGATE_RECORDING', env.EVALGATE_RECORDING, 1, 0, 1) === 1,
    traceRetentionDays: int('EVALGATE_TRACE_RETENTION_DAYS', env.EVALGATE_TRACE_RETENTION_DAYS, 0, 0, 36_500),
    otlpIngest: otlpIngestSettings(env, bodyLimit),
    logRetentionDays: int('EVALGATE_LOG_RETENTION_DAYS', env.EVALGATE_LOG_RETENTION_DAYS, 0, 0, 36_500),
    sessionLimits: {
      maxTurns: int('EVALGATE_SESSION_MAX_TURNS', env.EVALGATE_SESSION_MAX_TURNS, 1000, 1, 100_000),
      maxBytes: int('EVALGATE_SESSION_MAX_BYTES', env.EVALGATE_SESSION_MAX_BYTES, 33_554_432, 1024, 2 ** 31),
    },
    modelCacheMs: int('EVALGATE_MODEL_CACHE_MS', env.EVALGATE_MODEL_CACHE_MS, 5_000, 0, 3_600_000),
    providers: providerSettings(env),
    secretKey: secretKey(env.EVALGATE_SECRET_KEY),
    upstreamPolicy: {
      // Closed by default whenever the server is reachable from elsewhere; open on the embedded default.
      blockPrivate:
        int(
          'EVALGATE_BLOCK_PRIVATE_UPSTREAMS',
          env.EVALGATE_BLOCK_PRIVATE_UPSTREAMS,
          isLoopbackHost(host) ? 0 : 1,
          0,
          1,
        ) === 1,
      allowedHosts: hostList(env.EVALGATE_ALLOWED_UPSTREAM_HOSTS),
    },
    logWriter: {
      batchSize: int('EVALGATE_LOG_BATCH_SIZE', env.EVALGATE_LOG_BATCH_SIZE, 500, 1, 10_000),
      flushMs: int('EVALGATE_LOG_FLUSH_MS', env.EVALGATE_LOG_FLUSH_MS, 200, 1, 60_000),
      maxBuffered: int('EVALGATE_LOG_MAX_BUFFERED', env.EVALGATE_LOG_MAX_BUFFERED, 50_000, 1, 10_000_000),
      thread: int('EVALGATE_LOG_WRITER_THREAD', env.EVALGATE_LOG_WRITER_THREAD, 1, 0, 1) === 1,
      spool: int('EVALGATE_LOG_SPOOL', env.EVALGATE_LOG_SPOOL, 1, 0, 1) === 1,
    },
    uploadLimit: int('EVALGATE_UPLOAD_LIMIT', env.EVALGATE_UPLOAD_LIMIT, 4 * 1024 ** 3, 1024, 1024 ** 4),
    pricesFile: text(env.EVALGATE_PRICES_FILE),
    codeEvaluators: codeEvaluatorSettings(env),
    dashboard: {
      providers: oidcProvidersOf(env.EVALGATE_OIDC_PROVIDERS),
      publicUrl: publicUrlOf(env.EVALGATE_PUBLIC_URL),
      adminEmail: adminEmailOf(env.EVALGATE_ADMIN_EMAIL),
      sessionTtlMs: int(
        'EVALGATE_SESSION_TTL_MS',
        env.EVALGATE_SESSION_TTL_MS,
        604_800_000,
        60_000,
        31_536_000_000,
      ),
    },
    otel: otelExportSettings(env),
  };
}
