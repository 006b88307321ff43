// Database-independent: the sandbox runner's client settings, parsed from the environment.
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../../src/config.js';
import { tempDir } from '../helpers/temp.js';

const load = (env: Record<string, string>) =>
  loadConfig({ EVALGATE_DATA_DIR: '/tmp/evalgate-config-test', ...env }).codeEvaluators.remote;
const TOKEN = 'a-token-of-twenty-four-chars';

describe('EVALGATE_SANDBOX_URL and its token', () => {
  it('runs code evaluators here unless a runner is named', () => {
    expect(load({})).toBeNull();
    expect(load({ EVALGATE_SANDBOX_TOKEN: TOKEN })).toBeNull();
  });

  it('names the runner and its token, from the variable or a file', () => {
    expect(load({ EVALGATE_SANDBOX_URL: 'http://sandbox:8090/', EVALGATE_SANDBOX_TOKEN: TOKEN })).toEqual({
      url: 'http://sandbox:8090',
      token: TOKEN,
    });
    const tmp = tempDir();
    try {
      const file = path.join(tmp.dir, 'token');
      fs.writeFileSync(file, `${TOKEN}\n`);
      expect(
        load({ EVALGATE_SANDBOX_URL: 'http://127.0.0.1:8090', EVALGATE_SANDBOX_TOKEN_FILE: file }),
      ).toEqual({
        url: 'http://127.0.0.1:8090',
        token: TOKEN,
      });
    } finally {
      tmp.remove();
    }
  });

  it('refuses a runner without a token, a short token and a URL that is not http(s)', () => {
    expect(() => load({ EVALGATE_SANDBOX_URL: 'http://sandbox:8090' })).toThrow(
      /EVALGATE_SANDBOX_URL needs the sandbox runner's token: set EVALGATE_SANDBOX_TOKEN/,
    );
    expect(() =>
      load({ EVALGATE_SANDBOX_URL: 'http://sandbox:8090', EVALGATE_SANDBOX_TOKEN: 'short' }),
    ).toThrow(ConfigError);
    expect(() => load({ EVALGATE_SANDBOX_URL: 'unix:/run/sandbox', EVALGATE_SANDBOX_TOKEN: TOKEN })).toThrow(
      /EVALGATE_SANDBOX_URL must be an http\(s\) URL/,
    );
  });
});
