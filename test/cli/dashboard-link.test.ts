import { execFile } from 'node:child_process';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cliArgs } from '../helpers/cli-bundle.js';
import { type Harness, startHarness } from '../helpers/harness.js';
import { ROOT } from './cli-helpers.js';

// `evalgate dashboard link` mints a new one-time link in a running server's database: the printed link
// expired or was spent, and no restart is needed for another.
let h: Harness;

beforeAll(async () => {
  h = await startHarness();
});
afterAll(async () => {
  await h?.close();
});

function link(extraEnv: Record<string, string>, ...args: string[]) {
  const env = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith('EVALGATE_')));
  return new Promise<{ code: number; stdout: string; stderr: string }>((resolve) => {
    execFile(
      process.execPath,
      [...cliArgs(), 'dashboard', 'link', ...args],
      {
        cwd: ROOT,
        env: {
          ...env,
          EVALGATE_DATA_DIR: h.database.dataDir,
          EVALGATE_DATABASE_URL: h.database.url,
          EVALGATE_LOG_LEVEL: 'silent',
          ...extraEnv,
        },
      },
      (err, stdout, stderr) => resolve({ code: err ? Number(err.code ?? 1) : 0, stdout, stderr }),
    );
  });
}

describe('evalgate dashboard link', () => {
  it("mints a link the running server honours once, on the server's address", {
    timeout: 60_000,
  }, async () => {
    const res = await link({}, '--url', `${h.url}/`);
    expect(res.code, res.stderr).toBe(0);
    const url = /^ {2}(http:\/\/\S+)$/m.exec(res.stdout)?.[1] ?? '';
    expect(url.startsWith(`${h.url}/dashboard/api/auth/local?token=`)).toBe(true);
    const first = await fetch(url, { redirect: 'manual' });
    expect(first.status).toBe(302);
    expect(first.headers.get('location')).toBe('/');
    expect(first.headers.getSetCookie().some((c) => c.startsWith('evalgate_session='))).toBe(true);
    const again = await fetch(url, { redirect: 'manual' });
    expect(again.headers.get('location')).toBe('/signin?error=link_invalid');
  });

  it('is built on the base URL the CLI reaches the server at, not on the default port', {
    // Four CLI processes, each starting through tsx: slow on a loaded machine.
    timeout: 180_000,
  }, async () => {
    expect(h.url).not.toContain(':8080');
    for (const [env, args] of [
      [{ EVALGATE_BASE_URL: `${h.url}/` }, []],
      [{}, ['--base-url', h.url]],
    ] as const) {
      const res = await link(env, ...args);
      expect(res.code, res.stderr).toBe(0);
      const url = /^ {2}(http:\/\/\S+)$/m.exec(res.stdout)?.[1] ?? '';
      expect(url.startsWith(`${h.url}/dashboard/api/auth/local?token=`), res.stdout).toBe(true);
      expect((await fetch(url, { redirect: 'manual' })).headers.get('location')).toBe('/');
    }
    // The server's public URL, when set, is where users reach it.
    const pub = await link({ EVALGATE_BASE_URL: h.url, EVALGATE_PUBLIC_URL: 'https://evals.example.com' });
    expect(pub.stdout).toContain('  https://evals.example.com/dashboard/api/auth/local?token=');
    // A wrong base URL is said, not replaced by another address.
    const bad = await link({}, '--base-url', 'ftp://nowhere');
    expect(bad.code).toBe(1);
    expect(bad.stderr).toMatch(/must be an http/);
  });

  it('refuses when identity providers are configured', { timeout: 60_000 }, async () => {
    const providers = JSON.stringify([
      {
        id: 'a',
        name: 'A',
        issuer: 'http://127.0.0.1:9',
        client_id: 'c',
        client_secret: 'secret-0123456789abcdef',
      },
    ]);
    const res = await link({ EVALGATE_OIDC_PROVIDERS: providers });
    expect(res.code).toBe(1);
    expect(res.stderr).toMatch(/identity providers are configured .*sign in through them/);
  });
});
