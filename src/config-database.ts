import path from 'node:path';
import { ConfigError } from './config-sections.js';

/**
 * The database URL (EVALGATE_DATABASE_URL, by default SQLite in the data directory). `password`
 * (EVALGATE_DATABASE_PASSWORD, or its _FILE: the secret file PostgreSQL itself is given) goes into a
 * postgres:// URL without one, so that the URL is written from plain settings and the password kept once.
 */
export function databaseUrl(raw: string | null, dataDir: string, password: string | null): string {
  const url = raw ?? `sqlite:${path.join(dataDir, 'evalgate.db')}`;
  const postgres = /^postgres(ql)?:\/\//.test(url);
  if (!postgres && !url.startsWith('sqlite:')) {
    throw new ConfigError(
      `EVALGATE_DATABASE_URL must start with postgres://, postgresql:// or sqlite:, got "${url.replace(/\/\/[^@]*@/, '//***@')}"`,
    );
  }
  if (password === null) return url;
  if (!postgres)
    throw new ConfigError('EVALGATE_DATABASE_PASSWORD is for a postgres:// EVALGATE_DATABASE_URL');
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    throw new ConfigError('EVALGATE_DATABASE_URL is not a valid URL');
  }
  if (parsed.password !== '') {
    throw new ConfigError(
      'EVALGATE_DATABASE_URL has a password and EVALGATE_DATABASE_PASSWORD is set: give one of them',
    );
  }
  parsed.password = encodeURIComponent(password);
  return parsed.toString();
}
