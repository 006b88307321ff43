import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { ConfigurationError } from './errors.js';

export const ENVIRONMENTS = ['production', 'sandbox'] as const;
export type EvalgateEnvironment = (typeof ENVIRONMENTS)[number];

/** One named endpoint of the user config file: where a deployment is and, optionally, its key. */
export interface ConfigEndpoint {
  name: string;
  environment: EvalgateEnvironment | null;
  region: string | null;
  base_url: string;
  api_key: string | null;
}

/** `~/.config/evalgate/config.json`: named endpoints and the one in use (as kubectl contexts). */
export interface ConfigFile {
  path: string;
  current: string | null;
  endpoints: ConfigEndpoint[];
}

type Env = Record<string, string | undefined>;

/** A set, non-blank environment variable, trimmed; null otherwise. */
export function envText(env: Env, name: string): string | null {
  const value = env[name]?.trim();
  return value ? value : null;
}

/** EVALGATE_CONFIG, else $XDG_CONFIG_HOME/evalgate/config.json, else ~/.config/evalgate/config.json. */
export function configFilePath(env: Env): string {
  const explicit = envText(env, 'EVALGATE_CONFIG');
  if (explicit) return path.resolve(explicit);
  const xdg = envText(env, 'XDG_CONFIG_HOME');
  const base = xdg && path.isAbsolute(xdg) ? xdg : path.join(os.homedir(), '.config');
  return path.join(base, 'evalgate', 'config.json');
}

export function isEnvironment(value: string): value is EvalgateEnvironment {
  return (ENVIRONMENTS as readonly string[]).includes(value);
}

/** A base URL without trailing slashes or a trailing /v1 (the API's paths carry it); checked as http(s). */
export function normalizeBaseUrl(value: string, source: string): string {
  let url: URL;
  try {
    url = new URL(value.trim());
  } catch {
    throw new ConfigurationError(`${source} is not a valid URL: '${value}'`);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') {
    throw new ConfigurationError(`${source} must be an http:// or https:// URL, got '${value}'`);
  }
  if (url.search || url.hash) {
    throw new ConfigurationError(`${source} must not carry a query or fragment, got '${value}'`);
  }
  return url.toString().replace(/\/+$/, '').replace(/\/v1$/, '');
}

function optionalText(raw: Record<string, unknown>, key: string, where: string): string | null {
  const value = raw[key];
  if (value === undefined || value === null) return null;
  if (typeof value !== 'string' || value.trim() === '') {
    throw new ConfigurationError(`${where}: "${key}" must be a non-empty string`);
  }
  return value.trim();
}

function parseEndpoint(raw: unknown, index: number, file: string): ConfigEndpoint {
  const where = `${file}: endpoints[${index}]`;
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) {
    throw new ConfigurationError(`${where} must be an object`);
  }
  const entry = raw as Record<string, unknown>;
  const known = ['name', 'environment', 'region', 'base_url', 'api_key'];
  const unknown = Object.keys(entry).filter((k) => !known.includes(k));
  if (unknown.length) {
    throw new ConfigurationError(
      `${where}: unknown field(s) ${unknown.join(', ')}; allowed: ${known.join(', ')}`,
    );
  }
  const name = optionalText(entry, 'name', where);
  if (name === null) throw new ConfigurationError(`${where}: "name" is required`);
  const environment = optionalText(entry, 'environment', where);
  if (environment !== null && !isEnvironment(environment)) {
    throw new ConfigurationError(
      `${where}: "environment" must be one of ${ENVIRONMENTS.join(', ')}, got '${environment}'`,
    );
  }
  const baseUrl = optionalText(entry, 'base_url', where);
  if (baseUrl === null) throw new ConfigurationError(`${where}: "base_url" is required`);
  return {
    name,
    environment,
    region: optionalText(entry, 'region', where),
    base_url: normalizeBaseUrl(baseUrl, `${where}.base_url`),
    api_key: optionalText(entry, 'api_key', where),
  };
}

/** The config file at `file`, checked; null when there is none. */
export function readConfigFile(file: string): ConfigFile | null {
  let text: string;
  try {
    text = fs.readFileSync(file, 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return null;
    throw new ConfigurationError(`Cannot read the Evalgate config file ${file}: ${(err as Error).message}`);
  }
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch (err) {
    throw new ConfigurationError(
      `The Evalgate config file ${file} is not valid JSON: ${(err as Error).message}`,
    );
  }
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) {
    throw new ConfigurationError(`The Evalgate config file ${file} must hold a JSON object`);
  }
  const top = raw as Record<string, unknown>;
  const endpoints = top.endpoints ?? [];
  if (!Array.isArray(endpoints)) throw new ConfigurationError(`${file}: "endpoints" must be an array`);
  const parsed = endpoints.map((e, i) => parseEndpoint(e, i, file));
  const names = new Set<string>();
  for (const e of parsed) {
    if (names.has(e.name)) throw new ConfigurationError(`${file}: two endpoints are named '${e.name}'`);
    names.add(e.name);
  }
  const current = optionalText(top, 'current', file);
  if (current !== null && !names.has(current)) {
    throw new ConfigurationError(`${file}: "current" names '${current}', which is not among the endpoints`);
  }
  return { path: file, current, endpoints: parsed };
}

export interface Criteria {
  name: string | null;
  environment: EvalgateEnvironment | null;
  region: string | null;
}

export const describeCriteria = (c: Criteria): string =>
  [
    c.name !== null ? `name '${c.name}'` : null,
    c.environment !== null ? `environment '${c.environment}'` : null,
    c.region !== null ? `region '${c.region}'` : null,
  ]
    .filter((s) => s !== null)
    .join(', ');

/**
 * The endpoints that match every given criterion; among several, the `current` one. Null when none
 * matches; a ConfigurationError when several do and `current` is not one of them.
 */
export function matchEndpoint(
  file: ConfigFile,
  criteria: Criteria,
  baseUrl: string | null = null,
): ConfigEndpoint | null {
  const found = file.endpoints.filter(
    (e) =>
      (baseUrl === null || e.base_url === baseUrl) &&
      (criteria.name === null || e.name === criteria.name) &&
      (criteria.environment === null || e.environment === criteria.environment) &&
      (criteria.region === null || e.region === criteria.region),
  );
  if (found.length <= 1) return found[0] ?? null;
  const current = found.find((e) => e.name === file.current);
  if (current) return current;
  const what = [describeCriteria(criteria), baseUrl !== null ? `base_url ${baseUrl}` : null]
    .filter((s) => s)
    .join(', ');
  throw new ConfigurationError(
    `Several endpoints of ${file.path} match ${what || 'the request'}: ${found.map((e) => e.name).join(', ')}; ` +
      'set EVALGATE_ENDPOINT (or the endpoint option) to one of them, or make one of them "current"',
  );
}
