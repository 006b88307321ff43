import fs from 'node:fs';
import path from 'node:path';
import { inspect } from 'node:util';
import { afterAll, describe, expect, it } from 'vitest';
import { ConfigurationError, Evalgate, resolveConfig } from '../../src/client/index.js';
import { testDbKind } from '../helpers/databases.js';
import { tempDirs } from '../helpers/temp.js';

// Configuration precedence: option > environment variable > config-file endpoint > default. No server
// and no database: once, on SQLite.

const temp = tempDirs('evalgate-client-config-');
afterAll(() => temp.removeAll());

const ENDPOINTS = {
  current: 'prod-eu',
  endpoints: [
    {
      name: 'prod-eu',
      environment: 'production',
      region: 'eu',
      base_url: 'https://eu.example.com/',
      api_key: 'eg_eu',
    },
    {
      name: 'prod-us',
      environment: 'production',
      region: 'us',
      base_url: 'https://us.example.com',
      api_key: 'eg_us',
    },
    { name: 'sandbox', environment: 'sandbox', base_url: 'http://127.0.0.1:9999/v1', api_key: 'eg_sb' },
    { name: 'keyless', environment: 'sandbox', region: 'lab', base_url: 'http://lab.example.com' },
  ],
};

/** A config file with `content`, and the environment that points at it. */
function withFile(content: unknown, env: Record<string, string> = {}) {
  const file = path.join(temp.make(), 'config.json');
  fs.writeFileSync(file, typeof content === 'string' ? content : JSON.stringify(content));
  return { EVALGATE_CONFIG: file, ...env };
}

const noFile = (env: Record<string, string> = {}) => ({
  EVALGATE_CONFIG: path.join(temp.make(), 'missing.json'),
  ...env,
});

function configError(fn: () => unknown): ConfigurationError {
  try {
    fn();
  } catch (err) {
    expect(err).toBeInstanceOf(ConfigurationError);
    return err as ConfigurationError;
  }
  throw new Error('expected a ConfigurationError');
}

describe.skipIf(testDbKind() === 'postgres')('client configuration', () => {
  it('uses the defaults with only a key', () => {
    const c = resolveConfig({ env: noFile({ EVALGATE_API_KEY: 'eg_env' }) });
    expect(c).toMatchObject({
      apiKey: 'eg_env',
      baseURL: 'http://127.0.0.1:8080',
      timeoutMs: 60_000,
      maxRetries: 2,
      environment: null,
      region: null,
      endpoint: null,
      sources: { apiKey: 'env', baseURL: 'default' },
    });
  });

  it('takes options over environment variables over the config file', () => {
    const env = withFile(ENDPOINTS, {
      EVALGATE_API_KEY: 'eg_env',
      EVALGATE_BASE_URL: 'http://env.example.com',
      EVALGATE_TIMEOUT: '2.5',
      EVALGATE_MAX_RETRIES: '5',
    });
    const fromEnv = resolveConfig({ env });
    expect(fromEnv).toMatchObject({
      apiKey: 'eg_env',
      baseURL: 'http://env.example.com',
      timeoutMs: 2500,
      maxRetries: 5,
      sources: { apiKey: 'env', baseURL: 'env' },
    });
    const fromOptions = resolveConfig({
      env,
      apiKey: 'eg_opt',
      baseURL: 'http://opt.example.com/v1/',
      timeoutMs: 1234,
      maxRetries: 0,
    });
    expect(fromOptions).toMatchObject({
      apiKey: 'eg_opt',
      baseURL: 'http://opt.example.com',
      timeoutMs: 1234,
      maxRetries: 0,
      sources: { apiKey: 'option', baseURL: 'option' },
    });
    // Without options or variables, the file's current endpoint.
    const fromFile = resolveConfig({ env: withFile(ENDPOINTS) });
    expect(fromFile).toMatchObject({
      apiKey: 'eg_eu',
      baseURL: 'https://eu.example.com',
      environment: 'production',
      region: 'eu',
      endpoint: { name: 'prod-eu' },
      sources: { apiKey: 'config', baseURL: 'config' },
    });
    // A key from the environment with the file's endpoint.
    expect(resolveConfig({ env: withFile(ENDPOINTS, { EVALGATE_API_KEY: 'eg_env' }) })).toMatchObject({
      apiKey: 'eg_env',
      baseURL: 'https://eu.example.com',
    });
  });

  it('selects an endpoint by environment and region, using current among several matches', () => {
    const pick = (env: Record<string, string>, options = {}) =>
      resolveConfig({ env: withFile(ENDPOINTS, env), ...options });
    expect(pick({ EVALGATE_ENVIRONMENT: 'production', EVALGATE_REGION: 'us' })).toMatchObject({
      baseURL: 'https://us.example.com',
      apiKey: 'eg_us',
      endpoint: { name: 'prod-us' },
    });
    expect(pick({ EVALGATE_REGION: 'us' }).endpoint?.name).toBe('prod-us');
    // Two production endpoints: the current one wins.
    expect(pick({ EVALGATE_ENVIRONMENT: 'production' }).endpoint?.name).toBe('prod-eu');
    // Two sandbox endpoints, neither current: ambiguous.
    expect(configError(() => pick({ EVALGATE_ENVIRONMENT: 'sandbox' })).message).toMatch(/sandbox, keyless/);
    // The option beats the variable, for environment and region alike.
    expect(
      pick(
        { EVALGATE_ENVIRONMENT: 'production', EVALGATE_API_KEY: 'k' },
        { environment: 'sandbox', region: 'lab' },
      ),
    ).toMatchObject({
      endpoint: { name: 'keyless' },
      baseURL: 'http://lab.example.com',
    });
    // By name.
    expect(pick({ EVALGATE_ENDPOINT: 'sandbox' })).toMatchObject({
      baseURL: 'http://127.0.0.1:9999',
      apiKey: 'eg_sb',
      environment: 'sandbox',
    });
    // No match is an error, not a fall-back to the default URL.
    expect(configError(() => pick({ EVALGATE_REGION: 'ap' })).message).toMatch(/region 'ap'.*no endpoint/);
    expect(
      configError(() => resolveConfig({ env: noFile({ EVALGATE_ENVIRONMENT: 'production' }) })).message,
    ).toMatch(/no config file at .*missing\.json/);
  });

  it('lets an explicit base URL win over endpoint selection', () => {
    const env = withFile(ENDPOINTS, {
      EVALGATE_ENVIRONMENT: 'production',
      EVALGATE_REGION: 'us',
      EVALGATE_API_KEY: 'eg_env',
    });
    expect(resolveConfig({ env, baseURL: 'http://mine.example.com' })).toMatchObject({
      baseURL: 'http://mine.example.com',
      apiKey: 'eg_env',
      endpoint: null,
    });
    // Without a key elsewhere, the key of the endpoint with that very base URL; never another one's.
    const keyless = withFile(ENDPOINTS, { EVALGATE_BASE_URL: 'https://us.example.com/' });
    expect(resolveConfig({ env: keyless })).toMatchObject({ apiKey: 'eg_us', endpoint: { name: 'prod-us' } });
    const unknown = withFile(ENDPOINTS, { EVALGATE_BASE_URL: 'http://elsewhere.example.com' });
    expect(configError(() => resolveConfig({ env: unknown })).message).toMatch(/EVALGATE_API_KEY/);
  });

  it('reads $XDG_CONFIG_HOME/evalgate/config.json; EVALGATE_CONFIG overrides it', () => {
    const xdg = temp.make();
    fs.mkdirSync(path.join(xdg, 'evalgate'));
    fs.writeFileSync(path.join(xdg, 'evalgate', 'config.json'), JSON.stringify(ENDPOINTS));
    const c = resolveConfig({ env: { XDG_CONFIG_HOME: xdg } });
    expect(c).toMatchObject({
      baseURL: 'https://eu.example.com',
      configPath: path.join(xdg, 'evalgate', 'config.json'),
    });
    const other = withFile({
      current: 'only',
      endpoints: [{ name: 'only', base_url: 'http://only.example.com', api_key: 'k' }],
    });
    expect(resolveConfig({ env: { XDG_CONFIG_HOME: xdg, ...other } }).baseURL).toBe(
      'http://only.example.com',
    );
    expect(resolveConfig({ env: { XDG_CONFIG_HOME: xdg }, configPath: other.EVALGATE_CONFIG }).apiKey).toBe(
      'k',
    );
  });

  it('fails clearly without a key', () => {
    const err = configError(() => new Evalgate({ env: noFile() }));
    expect(err.message).toMatch(/Missing API key.*EVALGATE_API_KEY/);
    const named = configError(() => new Evalgate({ env: withFile(ENDPOINTS, { EVALGATE_REGION: 'lab' }) }));
    expect(named.message).toMatch(/api_key.*'keyless'/);
  });

  it('fails clearly on invalid settings', () => {
    const bad = (env: Record<string, string>, options = {}) =>
      configError(() => resolveConfig({ env: noFile({ EVALGATE_API_KEY: 'k', ...env }), ...options }))
        .message;
    expect(bad({ EVALGATE_ENVIRONMENT: 'staging' })).toBe(
      "EVALGATE_ENVIRONMENT must be one of production, sandbox, got 'staging'",
    );
    expect(bad({}, { environment: 'prod' })).toMatch(/environment option must be one of production, sandbox/);
    expect(bad({ EVALGATE_TIMEOUT: 'soon' })).toMatch(
      /EVALGATE_TIMEOUT must be a positive number of seconds/,
    );
    expect(bad({ EVALGATE_TIMEOUT: '0' })).toMatch(/EVALGATE_TIMEOUT/);
    expect(bad({ EVALGATE_MAX_RETRIES: '-1' })).toMatch(/EVALGATE_MAX_RETRIES must be a whole number/);
    expect(bad({ EVALGATE_BASE_URL: 'ftp://x' })).toMatch(/EVALGATE_BASE_URL must be an http/);
    expect(bad({ EVALGATE_BASE_URL: 'not a url' })).toMatch(/EVALGATE_BASE_URL is not a valid URL/);
  });

  it('checks the config file, but reads it only when it can contribute', () => {
    const broken = (content: unknown) =>
      configError(() => resolveConfig({ env: withFile(content, { EVALGATE_API_KEY: 'k' }) })).message;
    expect(broken('{not json')).toMatch(/config\.json is not valid JSON/);
    expect(broken({ endpoints: [{ name: 'x', base_url: 'http://x', environment: 'staging' }] })).toMatch(
      /endpoints\[0\]: "environment" must be one of production, sandbox/,
    );
    expect(broken({ endpoints: [{ name: 'x' }] })).toMatch(/"base_url" is required/);
    expect(broken({ endpoints: [{ name: 'x', base_url: 'http://x', token: 'k' }] })).toMatch(
      /unknown field\(s\) token/,
    );
    expect(broken({ current: 'y', endpoints: [{ name: 'x', base_url: 'http://x' }] })).toMatch(
      /"current" names 'y'/,
    );
    const explicit = withFile('{not json', {
      EVALGATE_API_KEY: 'k',
      EVALGATE_BASE_URL: 'http://x.example.com',
    });
    expect(resolveConfig({ env: explicit }).baseURL).toBe('http://x.example.com');
  });

  it('shows the settings in force on the client', () => {
    const client = new Evalgate({
      env: withFile(ENDPOINTS, { EVALGATE_REGION: 'us', EVALGATE_TIMEOUT: '5' }),
    });
    expect(client).toMatchObject({
      baseURL: 'https://us.example.com',
      environment: 'production',
      region: 'us',
      endpoint: 'prod-us',
      timeoutMs: 5000,
      maxRetries: 2,
    });
    // The key stays out of logs of the client.
    expect(JSON.stringify(client)).not.toContain('eg_us');
    expect(inspect(client, { depth: 10 })).not.toContain('eg_us');
  });
});
