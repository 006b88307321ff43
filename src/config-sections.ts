import { availableParallelism } from 'node:os';

/**
 * The sections of the config with parsers of their own (dashboard, code evaluators) and the parse helpers
 * every section uses; `config.ts` assembles the whole.
 */

export type Env = Record<string, string | undefined>;

export class ConfigError extends Error {
  override name = 'ConfigError';
}

export function int(
  name: string,
  raw: string | undefined,
  fallback: number,
  min: number,
  max: number,
): number {
  if (raw === undefined || raw === '') return fallback;
  if (!/^\d+$/.test(raw.trim())) throw new ConfigError(`${name} must be a whole number, got "${raw}"`);
  const value = Number(raw);
  if (value < min || value > max)
    throw new ConfigError(`${name} must be between ${min} and ${max}, got ${value}`);
  return value;
}

export function text(raw: string | undefined): string | null {
  return raw === undefined || raw.trim() === '' ? null : raw.trim();
}

export function baseUrl(name: string, raw: string | undefined, fallback: string): string {
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
  /**
   * `EVALGATE_ADMIN_EMAIL` (lower-cased): a user whose provider-verified e-mail it is becomes an owner of
   * every organization without an owner at each sign-in. Null: the first user to sign in through a
   * provider does, once.
   */
  adminEmail: string | null;
}

/** `EVALGATE_ADMIN_EMAIL`: one e-mail address, or nothing. */
export function adminEmailOf(raw: string | undefined): string | null {
  const value = text(raw);
  if (value === null) return null;
  if (!/^[^\s@]+@[^\s@]+$/.test(value)) {
    throw new ConfigError(`EVALGATE_ADMIN_EMAIL must be one e-mail address, got "${value}"`);
  }
  return value.toLowerCase();
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
  /**
   * A sandbox runner (`evalgate sandbox-runner`) that runs code evaluators for this process
   * (`EVALGATE_SANDBOX_URL`, with the shared `EVALGATE_SANDBOX_TOKEN`); null: they run here.
   */
  remote: { url: string; token: string } | null;
}

/** The shared secret of the sandbox runner and its clients: long enough not to be guessed. */
export function sandboxTokenOf(raw: string | undefined): string | null {
  const token = text(raw);
  if (token !== null && token.length < 16) {
    throw new ConfigError('EVALGATE_SANDBOX_TOKEN must be at least 16 characters');
  }
  return token;
}

function remoteSandbox(env: Env): CodeEvaluatorSettings['remote'] {
  if (text(env.EVALGATE_SANDBOX_URL) === null) return null;
  const url = baseUrl('EVALGATE_SANDBOX_URL', env.EVALGATE_SANDBOX_URL, '');
  const token = sandboxTokenOf(env.EVALGATE_SANDBOX_TOKEN);
  if (token === null) {
    throw new ConfigError(
      "EVALGATE_SANDBOX_URL needs the sandbox runner's token: set EVALGATE_SANDBOX_TOKEN or EVALGATE_SANDBOX_TOKEN_FILE",
    );
  }
  return { url, token };
}

export function codeEvaluatorSettings(env: Env): CodeEvaluatorSettings {
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
    remote: remoteSandbox(env),
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
export function oidcProvidersOf(raw: string | undefined): OidcProviderSettings[] {
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
export function publicUrlOf(raw: string | undefined): string | null {
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

export interface RequestSettings {
  /** `EVALGATE_HEADERS_TIMEOUT_MS`: from the connection to the end of a request's headers. */
  headersTimeoutMs: number;
  /** `EVALGATE_BODY_TIMEOUT_MS`: from the end of the headers to the end of a JSON body (408 past it). */
  bodyTimeoutMs: number;
  /** `EVALGATE_UPLOAD_TIMEOUT_MS`: the same for streamed JSON-lines uploads. */
  uploadTimeoutMs: number;
  /** `EVALGATE_KEY_CONCURRENCY`: requests of one API key in progress at once in one process (429 past it). */
  keyConcurrency: number;
  /** `EVALGATE_MAX_CONNECTIONS`: open connections of one process (503 past it). */
  maxConnections: number;
}

export function requestSettings(env: Env): RequestSettings {
  return {
    headersTimeoutMs: int(
      'EVALGATE_HEADERS_TIMEOUT_MS',
      env.EVALGATE_HEADERS_TIMEOUT_MS,
      30_000,
      100,
      3_600_000,
    ),
    bodyTimeoutMs: int('EVALGATE_BODY_TIMEOUT_MS', env.EVALGATE_BODY_TIMEOUT_MS, 60_000, 100, 3_600_000),
    uploadTimeoutMs: int(
      'EVALGATE_UPLOAD_TIMEOUT_MS',
      env.EVALGATE_UPLOAD_TIMEOUT_MS,
      300_000,
      100,
      86_400_000,
    ),
    keyConcurrency: int('EVALGATE_KEY_CONCURRENCY', env.EVALGATE_KEY_CONCURRENCY, 256, 1, 1_000_000),
    maxConnections: int('EVALGATE_MAX_CONNECTIONS', env.EVALGATE_MAX_CONNECTIONS, 4096, 1, 1_000_000),
  };
}

/** Whether a listen address is reachable only from this machine. */
export function isLoopbackHost(host: string): boolean {
  const h = host.replace(/^\[|\]$/g, '').toLowerCase();
  return h === 'localhost' || h === '::1' || /^127\.\d+\.\d+\.\d+$/.test(h);
}

export interface ProviderSettings {
  /** The operator's credential; null leaves the provider disabled. */
  apiKey: string | null;
  /** Without a trailing slash, e.g. `https://api.openai.com/v1`. */
  baseUrl: string;
}

export interface UpstreamPolicySettings {
  /**
   * Refuse loopback and private ranges too (`EVALGATE_BLOCK_PRIVATE_UPSTREAMS`; default on unless the
   * server listens on a loopback address only).
   */
  blockPrivate: boolean;
  /**
   * Lower-case entries: host names (`*.example.com` wildcards), IP literals, either with `:port`, and CIDR
   * blocks. When set, only what they name may be used, and what they name is allowed even when private.
   * Null allows every host (subject to `blockPrivate`).
   */
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

/** The frontier providers' keys and base URLs (`openai/…`, `anthropic/…`, `gemini/…` models). */
export interface Providers {
  openai: ProviderSettings;
  anthropic: ProviderSettings;
  gemini: ProviderSettings;
}

export function providerSettings(env: Env): Providers {
  return {
    openai: {
      apiKey: text(env.OPENAI_API_KEY),
      baseUrl: baseUrl('OPENAI_BASE_URL', env.OPENAI_BASE_URL, 'https://api.openai.com/v1'),
    },
    anthropic: {
      apiKey: text(env.ANTHROPIC_API_KEY),
      baseUrl: baseUrl('ANTHROPIC_BASE_URL', env.ANTHROPIC_BASE_URL, 'https://api.anthropic.com/v1'),
    },
    gemini: {
      apiKey: text(env.GEMINI_API_KEY),
      baseUrl: baseUrl(
        'GEMINI_BASE_URL',
        env.GEMINI_BASE_URL,
        'https://generativelanguage.googleapis.com/v1beta',
      ),
    },
  };
}
