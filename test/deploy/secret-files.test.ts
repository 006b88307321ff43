// Database-independent: configuration read from secret files.
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config.js';
import { tempDirs } from '../helpers/temp.js';

const temp = tempDirs('evalgate-secrets-');
afterAll(() => temp.removeAll());

// Secrets as files (Docker and Kubernetes secrets): EVALGATE_<NAME>_FILE names a file whose content is
// the setting, as compose.yaml's scale-out profile gives the key pepper, the secret key and the database URL.
describe('settings read from *_FILE', () => {
  function secret(dir: string, name: string, content: string): string {
    const file = path.join(dir, name);
    fs.writeFileSync(file, content);
    return file;
  }

  it('reads the key pepper, the secret key and the database URL from files, one trailing newline dropped', () => {
    const dir = temp.make();
    const key = Buffer.alloc(32, 7).toString('base64');
    const config = loadConfig({
      EVALGATE_DATA_DIR: dir,
      EVALGATE_KEY_PEPPER_FILE: secret(dir, 'pepper', 'a-pepper-of-at-least-16-chars\n'),
      EVALGATE_SECRET_KEY_FILE: secret(dir, 'secret', `${key}\n`),
      EVALGATE_DATABASE_URL_FILE: secret(dir, 'url', 'postgres://evalgate:pw@127.0.0.1:5432/evalgate\n'),
      EVALGATE_REDIS_URL_FILE: secret(dir, 'redis', 'redis://:pw@127.0.0.1:6379'),
    });
    expect(config.keyPepper).toBe('a-pepper-of-at-least-16-chars');
    expect(config.databaseUrl).toBe('postgres://evalgate:pw@127.0.0.1:5432/evalgate');
    expect(config.redisUrl).toBe('redis://:pw@127.0.0.1:6379');
    expect(config.secretKey?.equals(Buffer.alloc(32, 7))).toBe(true);
  });

  it('checks a value from a file like one from the variable', () => {
    const dir = temp.make();
    expect(() =>
      loadConfig({ EVALGATE_DATA_DIR: dir, EVALGATE_KEY_PEPPER_FILE: secret(dir, 'short', 'short\n') }),
    ).toThrow(/EVALGATE_KEY_PEPPER must be at least 16 characters/);
  });

  it('refuses a setting given both ways, and a file it cannot read, naming the variable', () => {
    const dir = temp.make();
    const file = secret(dir, 'pepper', 'a-pepper-of-at-least-16-chars');
    expect(() =>
      loadConfig({
        EVALGATE_DATA_DIR: dir,
        EVALGATE_KEY_PEPPER: 'another-pepper-of-16-chars',
        EVALGATE_KEY_PEPPER_FILE: file,
      }),
    ).toThrow('EVALGATE_KEY_PEPPER and EVALGATE_KEY_PEPPER_FILE are both set');
    expect(() =>
      loadConfig({ EVALGATE_DATA_DIR: dir, EVALGATE_SECRET_KEY_FILE: path.join(dir, 'missing') }),
    ).toThrow(/EVALGATE_SECRET_KEY_FILE: cannot read .*missing: ENOENT/);
  });

  it('puts EVALGATE_DATABASE_PASSWORD(_FILE) into a postgres URL without one, so the URL is plain settings', () => {
    const dir = temp.make();
    // The same secret file PostgreSQL's container is given (compose.yaml), with characters a URL escapes.
    const password = secret(dir, 'postgres_password', 'p@ss:w/rd%\n');
    const config = loadConfig({
      EVALGATE_DATA_DIR: dir,
      EVALGATE_DATABASE_URL: 'postgres://evalgate@postgres:5433/evalgate',
      EVALGATE_DATABASE_PASSWORD_FILE: password,
    });
    const url = new URL(config.databaseUrl);
    expect([url.username, decodeURIComponent(url.password), url.host, url.pathname]).toEqual([
      'evalgate',
      'p@ss:w/rd%',
      'postgres:5433',
      '/evalgate',
    ]);
    expect(() =>
      loadConfig({
        EVALGATE_DATA_DIR: dir,
        EVALGATE_DATABASE_URL: 'postgres://evalgate:other@postgres:5432/evalgate',
        EVALGATE_DATABASE_PASSWORD: 'pw',
      }),
    ).toThrow('EVALGATE_DATABASE_URL has a password and EVALGATE_DATABASE_PASSWORD is set');
    expect(() => loadConfig({ EVALGATE_DATA_DIR: dir, EVALGATE_DATABASE_PASSWORD: 'pw' })).toThrow(
      'EVALGATE_DATABASE_PASSWORD is for a postgres:// EVALGATE_DATABASE_URL',
    );
  });

  it('leaves EVALGATE_PRICES_FILE, a setting of its own, alone', () => {
    const dir = temp.make();
    const prices = secret(dir, 'prices.json', '{}');
    expect(loadConfig({ EVALGATE_DATA_DIR: dir, EVALGATE_PRICES_FILE: prices }).pricesFile).toBe(prices);
  });
});
