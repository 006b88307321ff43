import {
  type ConfigEndpoint,
  type ConfigFile,
  type Criteria,
  configFilePath,
  describeCriteria,
  ENVIRONMENTS,
  type EvalgateEnvironment,
  envText,
  isEnvironment,
  matchEndpoint,
  normalizeBaseUrl,
  readConfigFile,
} from './config-file.js';
import { ConfigurationError } from './errors.js';

export type { ConfigEndpoint, ConfigFile, EvalgateEnvironment };

export const DEFAULT_BASE_URL = 'http://127.0.0.1:8080';
export const DEFAULT_TIMEOUT_MS = 60_000;
export const DEFAULT_MAX_RETRIES = 2;

export interface ClientOptions {
  /** Default: EVALGATE_API_KEY, else the `api_key` of the selected config-file endpoint. */
  apiKey?: string;
  /** The server's root (a trailing /v1 is dropped). Default: EVALGATE_BASE_URL, else the selected endpoint. */
  baseURL?: string;
  /** Selects a config-file endpoint: `production` or `sandbox`. Default: EVALGATE_ENVIRONMENT. */
  environment?: EvalgateEnvironment;
  /** Selects a config-file endpoint by region. Default: EVALGATE_REGION. */
  region?: string;
  /** Selects a config-file endpoint by name. Default: EVALGATE_ENDPOINT. */
  endpoint?: string;
  /** Per-attempt timeout in ms. Default: EVALGATE_TIMEOUT (seconds) × 1000, else 60 000. */
  timeoutMs?: number;
  /** Retries after the first attempt. Default: EVALGATE_MAX_RETRIES, else 2. */
  maxRetries?: number;
  /** The config file. Default: EVALGATE_CONFIG, else $XDG_CONFIG_HOME/evalgate/config.json, else ~/.config/…. */
  configPath?: string;
  /** Headers sent with every request. */
  defaultHeaders?: Record<string, string>;
  /** The environment variables to read (default `process.env`). */
  env?: Record<string, string | undefined>;
  /** The fetch implementation (default: the global one of Node.js 20). */
  fetch?: typeof fetch;
}

/** Where a setting came from. */
export type SettingSource = 'option' | 'env' | 'config' | 'default';

export interface ResolvedConfig {
  apiKey: string;
  baseURL: string;
  environment: EvalgateEnvironment | null;
  region: string | null;
  /** The config-file endpoint in use (for the base URL or the key), if any. */
  endpoint: ConfigEndpoint | null;
  configPath: string;
  timeoutMs: number;
  maxRetries: number;
  sources: { apiKey: SettingSource; baseURL: SettingSource };
}

type Env = Record<string, string | undefined>;

function pick<T>(option: T | undefined, env: T | null): [T | null, SettingSource] {
  if (option !== undefined && option !== null) return [option, 'option'];
  if (env !== null) return [env, 'env'];
  return [null, 'default'];
}

function environmentOf(options: ClientOptions, env: Env): EvalgateEnvironment | null {
  const [value, source] = pick<string>(options.environment, envText(env, 'EVALGATE_ENVIRONMENT'));
  if (value === null) return null;
  const text = value.trim();
  if (!isEnvironment(text)) {
    const name = source === 'option' ? 'The environment option' : 'EVALGATE_ENVIRONMENT';
    throw new ConfigurationError(`${name} must be one of ${ENVIRONMENTS.join(', ')}, got '${value}'`);
  }
  return text;
}

function timeoutOf(options: ClientOptions, env: Env): number {
  if (options.timeoutMs !== undefined) {
    if (!Number.isFinite(options.timeoutMs) || options.timeoutMs <= 0) {
      throw new ConfigurationError(
        `The timeoutMs option must be a positive number, got ${options.timeoutMs}`,
      );
    }
    return options.timeoutMs;
  }
  const raw = envText(env, 'EVALGATE_TIMEOUT');
  if (raw === null) return DEFAULT_TIMEOUT_MS;
  const seconds = /^\d+(\.\d+)?$/.test(raw) ? Number(raw) : Number.NaN;
  if (!(seconds > 0)) {
    throw new ConfigurationError(`EVALGATE_TIMEOUT must be a positive number of seconds, got '${raw}'`);
  }
  return seconds * 1000;
}

function maxRetriesOf(options: ClientOptions, env: Env): number {
  const check = (value: number, name: string) => {
    if (!Number.isInteger(value) || value < 0 || value > 100) {
      throw new ConfigurationError(`${name} must be a whole number from 0 to 100, got '${value}'`);
    }
    return value;
  };
  if (options.maxRetries !== undefined) return check(options.maxRetries, 'The maxRetries option');
  const raw = envText(env, 'EVALGATE_MAX_RETRIES');
  if (raw === null) return DEFAULT_MAX_RETRIES;
  if (!/^\d+$/.test(raw)) {
    throw new ConfigurationError(`EVALGATE_MAX_RETRIES must be a whole number from 0 to 100, got '${raw}'`);
  }
  return check(Number(raw), 'EVALGATE_MAX_RETRIES');
}

/**
 * The client's settings. Each one is taken from, in order: the constructor option, the environment
 * variable, the config-file endpoint, the default. An explicit base URL (option or EVALGATE_BASE_URL)
 * always wins over endpoint selection; the file then only supplies the key of an endpoint with that very
 * base URL. Without one, an endpoint is selected by name, environment and region (those given), or else
 * the file's `current` one; selecting with no match is an error, never a silent fall-back to localhost.
 */
export function resolveConfig(options: ClientOptions = {}): ResolvedConfig {
  const env = options.env ?? process.env;
  const environment = environmentOf(options, env);
  const [region] = pick(options.region?.trim() || undefined, envText(env, 'EVALGATE_REGION'));
  const [name] = pick(options.endpoint?.trim() || undefined, envText(env, 'EVALGATE_ENDPOINT'));
  const criteria: Criteria = { name, environment, region };
  const selecting = name !== null || environment !== null || region !== null;
  const timeoutMs = timeoutOf(options, env);
  const maxRetries = maxRetriesOf(options, env);

  const [rawBase, baseSource] = pick(options.baseURL, envText(env, 'EVALGATE_BASE_URL'));
  const explicitBase =
    rawBase === null
      ? null
      : normalizeBaseUrl(rawBase, baseSource === 'option' ? 'The baseURL option' : 'EVALGATE_BASE_URL');
  const [explicitKey, keySource] = pick(
    options.apiKey?.trim() || undefined,
    envText(env, 'EVALGATE_API_KEY'),
  );

  const configPath = options.configPath ? options.configPath : configFilePath(env);
  // The file is read only when it can contribute, so a broken file never breaks a fully explicit setup.
  const needFile = explicitBase === null || explicitKey === null;
  const file: ConfigFile | null = needFile ? readConfigFile(configPath) : null;

  let endpoint: ConfigEndpoint | null = null;
  if (explicitBase === null && file !== null) {
    endpoint = selecting
      ? matchEndpoint(file, criteria)
      : (file.endpoints.find((e) => e.name === file.current) ?? null);
  } else if (explicitBase !== null && explicitKey === null && file !== null) {
    endpoint = matchEndpoint(file, criteria, explicitBase);
  }
  if (explicitBase === null && selecting && endpoint === null) {
    const where =
      file === null ? `there is no config file at ${configPath}` : `no endpoint of ${configPath} matches`;
    throw new ConfigurationError(
      `Cannot select an Evalgate endpoint by ${describeCriteria(criteria)}: ${where}. ` +
        'Add one (see docs/client.md) or set EVALGATE_BASE_URL.',
    );
  }

  const apiKey = explicitKey ?? endpoint?.api_key ?? null;
  if (apiKey === null) {
    const fromFile = endpoint
      ? `, or add "api_key" to the endpoint '${endpoint.name}' in ${configPath}`
      : ` or in an endpoint of ${configPath}`;
    throw new ConfigurationError(
      `Missing API key: set the EVALGATE_API_KEY environment variable, pass { apiKey } to new Evalgate()${fromFile}`,
      'api_key',
      fromFile,
    );
  }
  return {
    apiKey,
    baseURL: explicitBase ?? endpoint?.base_url ?? DEFAULT_BASE_URL,
    environment: environment ?? endpoint?.environment ?? null,
    region: region ?? endpoint?.region ?? null,
    endpoint,
    configPath,
    timeoutMs,
    maxRetries,
    sources: {
      apiKey: explicitKey !== null ? keySource : 'config',
      baseURL: explicitBase !== null ? baseSource : endpoint ? 'config' : 'default',
    },
  };
}
