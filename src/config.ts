import path from 'node:path';

/** Every setting of the service, parsed once at start from `EVALGATE_*` variables and CLI flags. */
export interface Config {
  host: string;
  port: number;
  /** Directory for the embedded database and generated secrets. */
  dataDir: string;
  /** `sqlite:<file>` (default, under dataDir) or `postgres://…`. */
  databaseUrl: string;
  redisUrl: string | null;
  /** Server-side secret mixed into API key hashes; generated into dataDir when unset. */
  keyPepper: string | null;
  /** Requests per minute per API key, and the burst allowed on top of the steady rate. */
  rateLimit: { perMinute: number; burst: number };
  logLevel: 'fatal' | 'error' | 'warn' | 'info' | 'debug' | 'trace' | 'silent';
  /** Largest accepted JSON request body, in bytes. */
  bodyLimit: number;
  /** How long a verified API key is trusted without a database look-up, in milliseconds. */
  keyCacheMs: number;
  /** Python interpreter used to check code evaluators. */
  python: string;
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
    keyPepper: pepper,
    rateLimit: {
      perMinute,
      burst: int('EVALGATE_RATE_LIMIT_BURST', env.EVALGATE_RATE_LIMIT_BURST, perMinute, 1, 10_000_000),
    },
    logLevel: logLevel as Config['logLevel'],
    bodyLimit: int('EVALGATE_BODY_LIMIT', env.EVALGATE_BODY_LIMIT, 10 * 1024 * 1024, 1024, 1024 ** 3),
    keyCacheMs: int('EVALGATE_KEY_CACHE_MS', env.EVALGATE_KEY_CACHE_MS, 10_000, 0, 3_600_000),
    python: text(env.EVALGATE_PYTHON) ?? 'python3',
  };
}
