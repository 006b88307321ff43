import fs from 'node:fs';
import { ConfigError, type Env } from './config-sections.js';

/** The settings that may be given as a file's content (`<NAME>_FILE`): those that hold secrets. */
export const FILE_SETTINGS = [
  'EVALGATE_DATABASE_URL',
  'EVALGATE_DATABASE_PASSWORD',
  'EVALGATE_REDIS_URL',
  'EVALGATE_KEY_PEPPER',
  'EVALGATE_SECRET_KEY',
  'EVALGATE_OIDC_PROVIDERS',
  'EVALGATE_SANDBOX_TOKEN',
] as const;

/**
 * `EVALGATE_KEY_PEPPER_FILE=/run/secrets/key_pepper` and the like (Docker and Kubernetes secrets): the
 * setting's value read from that file, one trailing newline dropped. Returns `env` with those values
 * filled in; giving a setting both ways, or a file that cannot be read, is a configuration error.
 */
export function withFileSettings(env: Env): Env {
  let out = env;
  for (const name of FILE_SETTINGS) {
    const file = env[`${name}_FILE`];
    if (file === undefined || file.trim() === '') continue;
    if (env[name] !== undefined && env[name].trim() !== '') {
      throw new ConfigError(`${name} and ${name}_FILE are both set: give one of them`);
    }
    let value: string;
    try {
      value = fs.readFileSync(file, 'utf8').replace(/\r?\n$/, '');
    } catch (err) {
      throw new ConfigError(
        `${name}_FILE: cannot read ${file}: ${(err as NodeJS.ErrnoException).code ?? err}`,
      );
    }
    out = { ...out, [name]: value };
  }
  return out;
}
