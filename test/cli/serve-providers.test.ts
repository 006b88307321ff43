import { spawn } from 'node:child_process';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type IdentityProvider, reservePort, startIdentityProvider } from '../dashboard/identity-provider.js';
import { cliArgs } from '../helpers/cli-bundle.js';
import { tempDir } from '../helpers/temp.js';
import { ROOT } from './cli-helpers.js';

/*
 * `evalgate serve` with identity providers, as an operator starts it: the banner lists each provider with
 * the redirect URI to register and whether its discovery answered (one does not: the server starts
 * anyway), says who will own the `default` organization, and a refused sign-in is logged with its reason.
 */
let idp: IdentityProvider;
let port = 0;
let downPort = 0;

beforeAll(async () => {
  // The server's port first: the provider must know the redirect URI before the server starts.
  const serverPort = await reservePort();
  port = serverPort.port;
  const down = await reservePort();
  downPort = down.port;
  await new Promise<void>((resolve) => down.server.close(() => resolve()));
  await new Promise<void>((resolve) => serverPort.server.close(() => resolve()));
  idp = await startIdentityProvider({
    reserved: await reservePort(),
    redirectUri: `http://127.0.0.1:${port}/dashboard/api/auth/callback/corp`,
  });
});
afterAll(async () => {
  await idp?.close();
});

// `serve` here starts with the environment cleared: always on SQLite, so it runs once (the SQLite project).
describe.skipIf(process.env.EVALGATE_TEST_DB === 'postgres')('serve with identity providers', () => {
  it('lists each provider with its redirect URI and discovery result, and logs a refused sign-in', {
    timeout: 90_000,
  }, async () => {
    const providers = [
      {
        id: 'corp',
        issuer: idp.issuer,
        client_id: idp.clientId,
        client_secret: idp.clientSecret,
        name: 'Corp SSO',
      },
      {
        id: 'gone',
        issuer: `http://127.0.0.1:${downPort}`,
        client_id: 'x',
        client_secret: 'secret-0123456789abcdef',
        name: 'Gone',
      },
    ];
    const env = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith('EVALGATE_')));
    const child = spawn(process.execPath, [...cliArgs(), 'serve', '--port', String(port)], {
      cwd: ROOT,
      env: {
        ...env,
        EVALGATE_DATA_DIR: tempDir('evalgate-serve-oidc-').dir,
        EVALGATE_LOG_LEVEL: 'info',
        EVALGATE_OIDC_PROVIDERS: JSON.stringify(providers),
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stopping = false;
    const base = `http://127.0.0.1:${port}`;
    child.stdout.setEncoding('utf8').on('data', (d: string) => {
      stdout += d;
      if (!stopping && /Gone \(gone\)/.test(stdout)) {
        stopping = true;
        // A callback whose state no browser was given: refused, and logged.
        void fetch(`${base}/dashboard/api/auth/callback/corp?code=c&state=forged`, { redirect: 'manual' })
          .then(async (res) => {
            expect(res.headers.get('location')).toBe('/signin?error=state_mismatch');
            // Leaves the log line the time to be written.
            await new Promise((r) => setTimeout(r, 500));
          })
          .finally(() => child.kill('SIGINT'));
      }
    });
    const timer = setTimeout(() => child.kill('SIGKILL'), 80_000);
    const code = await new Promise<number | null>((resolve) => child.on('exit', resolve));
    clearTimeout(timer);
    expect(code).toBe(0);
    expect(stdout).toContain(`Dashboard: ${base}/ — sign in through an identity provider:\n`);
    expect(stdout).toContain(
      `  Corp SSO (corp): redirect URI ${base}/dashboard/api/auth/callback/corp — discovery ok\n`,
    );
    expect(stdout).toMatch(
      new RegExp(
        `  Gone \\(gone\\): redirect URI ${base}/dashboard/api/auth/callback/gone — DISCOVERY FAILED: .*ECONNREFUSED`,
      ),
    );
    expect(stdout).toContain(
      "Organization 'default' has no owner yet: the first user to sign in through a provider",
    );
    // No one-time link with providers configured.
    expect(stdout).not.toContain('/dashboard/api/auth/local?token=');
    const refused = stdout
      .split('\n')
      .find((line) => line.includes('dashboard sign-in refused: state_mismatch'));
    expect(refused, stdout).toBeTruthy();
    expect(refused).toContain('"provider":"corp"');
  });
});
