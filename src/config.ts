import { availableParallelism } from 'node:os';
import path from 'node:path';
import { decodeSecretKey } from './catalog/models/crypto.js';

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
  /** Largest accepted JSON request body, in bytes. */
  bodyLimit: number;
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
  /** How long a resolved model (registry look-up) is reused by the gateway, in milliseconds. */
  modelCacheMs: number;
  /** Frontier providers, enabled by the operator's credentials; those go only to these base URLs. */
  providers: { openai: ProviderSettings; anthropic: ProviderSettings };
  /** 32-byte master key for credentials stored in the database; generated into dataDir when unset. */
  secretKey: Buffer | null;
  /** Which upstream addresses registered models may point at. */
  upstreamPolicy: UpstreamPolicySettings;
  /** Batching of the task log writer. */
  /** The task log writer; `thread`: on a worker thread with its own connection (not for in-memory SQLite). */
  logWriter: { batchSize: number; flushMs: number; maxBuffered: number; thread: boolean };
  /** Largest streamed upload (JSON-lines datasets and task log imports), in bytes. */
  uploadLimit: number;
  /** A price table that replaces the bundled data/prices.json. */
  pricesFile: string | null;
  /** Code evaluators: workers, the bubblewrap sandbox and requirement installs. */
  codeEvaluators: CodeEvaluatorSettings;
  /** The web dashboard: sign-in providers, the URL users reach it at, session lifetime. */
  dashboard: DashboardSettings;
}

/** One OpenID Connect provider users may sign in with (`EVALGATE_OIDC_PROVIDERS`). */
export interface OidcProviderSettings {
  /** Short name used in the redirect URI: `/dashboard/api/auth/callback/<id>`. */
  id: string;
  /** Issuer identifier; its discovery document is `<issuer>/.well-known/openid-configuration`. */
  issuer: string;
  clientId: string;
  clientSecret: string;
  /** Shown on the sign-in button. */
  name: string;
}

export interface DashboardSettings {
  providers: OidcProviderSettings[];
  /** `EVALGATE_PUBLIC_URL` without a trailing slash; null: `http://<host>:<port>` of the listening server. */
  publicUrl: string | null;
  /** Lifetime of a sign-in session (`EVALGATE_SESSION_TTL_MS`). */
  sessionTtlMs: number;
}

export interface ProviderSettings {
  /** The operator's credential; null leaves the provider disabled. */
  apiKey: string | null;
  /** Without a trailing slash, e.g. `https://api.openai.com/v1`. */
  baseUrl: string;
}

export interface UpstreamPolicySettings {
  /** Refuse loopback and private ranges too (`EVALGATE_BLOCK_PRIVATE_UPSTREAMS=1`). */
  blockPrivate: boolean;
  /** Lower-case host names (`*.example.com` wildcards allowed); null allows every host. */
  allowedHosts: string[] | null;
}

export interface UpstreamConfig {
  /** Connections per upstream origin. */
  connections: number;
  /** Sockets open to upstreams across all origins; a connect past it waits for one to close. */
  maxConnections: number;
  connectTimeoutMs: number;
  /** Time to the response headers (for non-streamed calls this includes the whole generation). */
  headersTimeoutMs: number;
  /** Longest silence between two body chunks. */
  bodyTimeoutMs: number;
  /** Idle keep-alive connections are closed after this long. */
  keepAliveMs: number;
  /** Retries after the first attempt on connection errors, timeouts and 5xx. */
  retries: number;
  /** Back-off base: attempt n waits a jittered base * 2^n, capped by retryMaxMs. */
  retryBaseMs: number;
  retryMaxMs: number;
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
  /** Whether `serve` executes runs itself (inline executor only). */
  serveExecutes: boolean;
  /** How long a run waits on 429s without any call succeeding before recording the rest as `rate_limited`. */
  rateLimitWaitMs: number;
  /** An evaluator's scorer (a code evaluator's Python workers) unused this long is closed. */
  scorerIdleMs: number;
}

export interface CodeEvaluatorSettings {
  /** Python workers running at once in this process (`EVALGATE_CODE_WORKERS`, default: CPUs). */
  workers: number;
  /** Positions per request line sent to a worker. */
  batchSize: number;
  /** Run without a sandbox (rlimits only) where bubblewrap cannot start. */
  unsafe: boolean;
  sandbox: {
    /** The bubblewrap executable. */
    bwrap: string;
    /** Wall-clock limit of one sample, enforced from Node (kill and respawn). */
    timeoutMs: number;
    /** A worker is replaced after this many samples. */
    recycleAfter: number;
    /** First uid workers drop to when the service runs as root. */
    uidBase: number;
    limits: { memoryMb: number; cpuSeconds: number; processes: number; fileSizeMb: number; tmpMb: number };
  };
  pip: {
    indexUrl: string | null;
    /** Directories or URLs of wheels (`EVALGATE_PIP_FIND_LINKS`, comma-separated). */
    findLinks: string[];
    timeoutMs: number;
  };
}

export type Env = Record<string, string | undefined>;

export class ConfigError extends Error {
  override name = 'ConfigError';
}

const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const;

function int(name: string, raw: string | undefined, fallback: number, min: number, max: number): number {
  if (raw === undefined || raw === '') return fallback;
  if (!/^\d+$/.test(raw.trim())) throw new ConfigError(`${name} must be a whole number, got "${raw}"`);
  const value = Number(raw);
  if (value < min || value > max)
    throw new ConfigError(`${name} must be between ${min} and ${max}, got ${value}`);
  return value;
}

function text(raw: string | undefined): string | null {
  return raw === undefined || raw.trim() === '' ? null : raw.trim();
}

function databaseUrl(raw: string | null, dataDir: string): string {
  if (raw === null) return `sqlite:${path.join(dataDir, 'evalgate.db')}`;
  if (/^postgres(ql)?:\/\//.test(raw) || raw.startsWith('sqlite:')) return raw;
  throw new ConfigError(
    `EVALGATE_DATABASE_URL must start with postgres://, postgresql:// or sqlite:, got "${raw.replace(/\/\/[^@]*@/, '//***@')}"`,
  );
}

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

function baseUrl(name: string, raw: string | undefined, fallback: string): string {
  const value = text(raw) ?? fallback;
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    throw new ConfigError(`${name} must be an http(s) URL, got "${value}"`);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') {
    throw new ConfigError(`${name} must be an http(s) URL, got "${value}"`);
  }
  return value.replace(/\/+$/, '');
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

function codeEvaluatorSettings(env: Env): CodeEvaluatorSettings {
  const cpus = Math.max(1, availableParallelism());
  return {
    workers: int('EVALGATE_CODE_WORKERS', env.EVALGATE_CODE_WORKERS, cpus, 1, 1024),
    batchSize: int('EVALGATE_CODE_BATCH_SIZE', env.EVALGATE_CODE_BATCH_SIZE, 1000, 1, 100_000),
    unsafe: int('EVALGATE_UNSAFE_CODE_EVALUATORS', env.EVALGATE_UNSAFE_CODE_EVALUATORS, 0, 0, 1) === 1,
    sandbox: {
      bwrap: text(env.EVALGATE_BWRAP) ?? 'bwrap',
      timeoutMs: int('EVALGATE_SANDBOX_TIMEOUT_MS', env.EVALGATE_SANDBOX_TIMEOUT_MS, 10_000, 10, 3_600_000),
      recycleAfter: int(
        'EVALGATE_SANDBOX_RECYCLE_SAMPLES',
        env.EVALGATE_SANDBOX_RECYCLE_SAMPLES,
        100_000,
        1,
        1_000_000_000,
      ),
      uidBase: int('EVALGATE_SANDBOX_UID_BASE', env.EVALGATE_SANDBOX_UID_BASE, 200_000, 1000, 3_000_000_000),
      limits: {
        memoryMb: int('EVALGATE_SANDBOX_MEMORY_MB', env.EVALGATE_SANDBOX_MEMORY_MB, 2048, 64, 1_048_576),
        cpuSeconds: int('EVALGATE_SANDBOX_CPU_SECONDS', env.EVALGATE_SANDBOX_CPU_SECONDS, 600, 1, 86_400),
        processes: int('EVALGATE_SANDBOX_MAX_PROCESSES', env.EVALGATE_SANDBOX_MAX_PROCESSES, 64, 1, 65_536),
        fileSizeMb: int('EVALGATE_SANDBOX_FILE_SIZE_MB', env.EVALGATE_SANDBOX_FILE_SIZE_MB, 64, 1, 1_048_576),
        tmpMb: int('EVALGATE_SANDBOX_TMP_MB', env.EVALGATE_SANDBOX_TMP_MB, 64, 1, 1_048_576),
      },
    },
    pip: {
      indexUrl: text(env.EVALGATE_PIP_INDEX_URL),
      findLinks: (text(env.EVALGATE_PIP_FIND_LINKS) ?? '')
        .split(',')
        .map((l) => l.trim())
        .filter((l) => l !== ''),
      timeoutMs: int('EVALGATE_PIP_TIMEOUT_MS', env.EVALGATE_PIP_TIMEOUT_MS, 600_000, 1000, 86_400_000),
    },
  };
}

const PROVIDER_ID = /^[a-z0-9][a-z0-9_-]{0,62}$/;

function providerField(where: string, entry: Record<string, unknown>, field: string): string {
  const value = entry[field];
  if (typeof value !== 'string' || value.trim() === '') {
    throw new ConfigError(`${where}.${field} must be a non-empty string`);
  }
  return value.trim();
}

/** `EVALGATE_OIDC_PROVIDERS`: a JSON array of `{id, issuer, client_id, client_secret, name}`. */
function oidcProvidersOf(raw: string | undefined): OidcProviderSettings[] {
  const value = text(raw);
  if (value === null) return [];
  let parsed: unknown;
  try {
    parsed = JSON.parse(value);
  } catch (err) {
    throw new ConfigError(`EVALGATE_OIDC_PROVIDERS must be a JSON array: ${(err as Error).message}`);
  }
  if (!Array.isArray(parsed)) {
    throw new ConfigError(
      'EVALGATE_OIDC_PROVIDERS must be a JSON array of {id, issuer, client_id, client_secret, name}',
    );
  }
  const seen = new Set<string>();
  return parsed.map((entry: unknown, i) => {
    const where = `EVALGATE_OIDC_PROVIDERS[${i}]`;
    if (typeof entry !== 'object' || entry === null || Array.isArray(entry)) {
      throw new ConfigError(`${where} must be an object {id, issuer, client_id, client_secret, name}`);
    }
    const fields = entry as Record<string, unknown>;
    const unknown = Object.keys(fields).filter(
      (k) => !['id', 'issuer', 'client_id', 'client_secret', 'name'].includes(k),
    );
    if (unknown.length) throw new ConfigError(`${where} has unknown fields: ${unknown.join(', ')}`);
    const id = providerField(where, fields, 'id');
    if (!PROVIDER_ID.test(id)) {
      throw new ConfigError(
        `${where}.id must be lower-case letters, digits, _ or - (at most 63), got "${id}"`,
      );
    }
    if (seen.has(id)) throw new ConfigError(`${where}.id "${id}" is used by another provider`);
    seen.add(id);
    // Kept exactly as given: it must equal the issuer of the discovery document (a trailing slash included).
    const issuer = providerField(where, fields, 'issuer');
    baseUrl(`${where}.issuer`, issuer, '');
    return {
      id,
      issuer,
      clientId: providerField(where, fields, 'client_id'),
      clientSecret: providerField(where, fields, 'client_secret'),
      name: providerField(where, fields, 'name'),
    };
  });
}

/** `EVALGATE_PUBLIC_URL`: the origin users reach the server at (behind a proxy: the proxy's). */
function publicUrlOf(raw: string | undefined): string | null {
  const value = text(raw);
  if (value === null) return null;
  const url = baseUrl('EVALGATE_PUBLIC_URL', value, '');
  if (new URL(url).pathname !== '/' || /[?#]/.test(url)) {
    throw new ConfigError(
      `EVALGATE_PUBLIC_URL must be an origin (scheme://host[:port]) without a path, got "${value}"`,
    );
  }
  return new URL(url).origin;
}

/** Flags given on the command line override the environment. */
export interface ConfigFlags {
  host?: string;
  port?: string;
  dataDir?: string;
  databaseUrl?: string;
}

export function loadConfig(env: Env = process.env, flags: ConfigFlags = {}): Config {
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
  return {
    host: flags.host ?? text(env.EVALGATE_HOST) ?? '127.0.0.1',
    port: int('port', flags.port ?? env.EVALGATE_PORT, 8080, 0, 65535),
    dataDir,
    databaseUrl: databaseUrl(flags.databaseUrl ?? text(env.EVALGATE_DATABASE_URL), dataDir),
    redisUrl,
    redisPrefix: redisPrefixOf(env.EVALGATE_REDIS_PREFIX),
    keyPepper: pepper,
    rateLimit: {
      perMinute,
      burst: int('EVALGATE_RATE_LIMIT_BURST', env.EVALGATE_RATE_LIMIT_BURST, perMinute, 1, 10_000_000),
      onRedisError: onRedisErrorOf(env.EVALGATE_RATE_LIMIT_ON_REDIS_ERROR),
    },
    logLevel: logLevel as Config['logLevel'],
    bodyLimit: int('EVALGATE_BODY_LIMIT', env.EVALGATE_BODY_LIMIT, 10 * 1024 * 1024, 1024, 1024 ** 3),
    keyCacheMs: int('EVALGATE_KEY_CACHE_MS', env.EVALGATE_KEY_CACHE_MS, 10_000, 0, 3_600_000),
    python: text(env.EVALGATE_PYTHON) ?? 'python3',
    runs: {
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
      serveExecutes: int('EVALGATE_SERVE_EXECUTES', env.EVALGATE_SERVE_EXECUTES, 1, 0, 1) === 1,
      rateLimitWaitMs: int(
        'EVALGATE_RATE_LIMIT_MAX_WAIT_MS',
        env.EVALGATE_RATE_LIMIT_MAX_WAIT_MS,
        600_000,
        100,
        86_400_000,
      ),
      scorerIdleMs: int('EVALGATE_SCORER_IDLE_MS', env.EVALGATE_SCORER_IDLE_MS, 10_000, 10, 3_600_000),
    },
    upstream: {
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
      retryBaseMs: int(
        'EVALGATE_UPSTREAM_RETRY_BASE_MS',
        env.EVALGATE_UPSTREAM_RETRY_BASE_MS,
        200,
        0,
        60_000,
      ),
      retryMaxMs: int(
        'EVALGATE_UPSTREAM_RETRY_MAX_MS',
        env.EVALGATE_UPSTREAM_RETRY_MAX_MS,
        5_000,
        0,
        600_000,
      ),
    },
    recording: int('EVALGATE_RECORDING', env.EVALGATE_RECORDING, 1, 0, 1) === 1,
    modelCacheMs: int('EVALGATE_MODEL_CACHE_MS', env.EVALGATE_MODEL_CACHE_MS, 5_000, 0, 3_600_000),
    providers: {
      openai: {
        apiKey: text(env.OPENAI_API_KEY),
        baseUrl: baseUrl('OPENAI_BASE_URL', env.OPENAI_BASE_URL, 'https://api.openai.com/v1'),
      },
      anthropic: {
        apiKey: text(env.ANTHROPIC_API_KEY),
        baseUrl: baseUrl('ANTHROPIC_BASE_URL', env.ANTHROPIC_BASE_URL, 'https://api.anthropic.com/v1'),
      },
    },
    secretKey: secretKey(env.EVALGATE_SECRET_KEY),
    upstreamPolicy: {
      blockPrivate:
        int('EVALGATE_BLOCK_PRIVATE_UPSTREAMS', env.EVALGATE_BLOCK_PRIVATE_UPSTREAMS, 0, 0, 1) === 1,
      allowedHosts: hostList(env.EVALGATE_ALLOWED_UPSTREAM_HOSTS),
    },
    logWriter: {
      batchSize: int('EVALGATE_LOG_BATCH_SIZE', env.EVALGATE_LOG_BATCH_SIZE, 500, 1, 10_000),
      flushMs: int('EVALGATE_LOG_FLUSH_MS', env.EVALGATE_LOG_FLUSH_MS, 200, 1, 60_000),
      maxBuffered: int('EVALGATE_LOG_MAX_BUFFERED', env.EVALGATE_LOG_MAX_BUFFERED, 50_000, 1, 10_000_000),
      thread: int('EVALGATE_LOG_WRITER_THREAD', env.EVALGATE_LOG_WRITER_THREAD, 1, 0, 1) === 1,
    },
    uploadLimit: int('EVALGATE_UPLOAD_LIMIT', env.EVALGATE_UPLOAD_LIMIT, 4 * 1024 ** 3, 1024, 1024 ** 4),
    pricesFile: text(env.EVALGATE_PRICES_FILE),
    codeEvaluators: codeEvaluatorSettings(env),
    dashboard: {
      providers: oidcProvidersOf(env.EVALGATE_OIDC_PROVIDERS),
      publicUrl: publicUrlOf(env.EVALGATE_PUBLIC_URL),
      sessionTtlMs: int(
        'EVALGATE_SESSION_TTL_MS',
        env.EVALGATE_SESSION_TTL_MS,
        604_800_000,
        60_000,
        31_536_000_000,
      ),
    },
  };
}
