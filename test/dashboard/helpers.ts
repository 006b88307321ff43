import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { expect } from 'vitest';
import { WEB_ROOT } from '../../src/dashboard/web.js';
import { type Harness, type HarnessOptions, startHarness } from '../helpers/harness.js';
import { type IdentityProvider, reservePort, startIdentityProvider } from './identity-provider.js';

/** Cookies by origin, as a browser keeps them (paths and expiry ignored: the tests send them where due). */
export class CookieJar {
  readonly #cookies = new Map<string, Map<string, string>>();

  store(url: string, res: Response): void {
    const origin = new URL(url).origin;
    const jar = this.#cookies.get(origin) ?? new Map<string, string>();
    for (const line of res.headers.getSetCookie()) {
      const [pair = ''] = line.split(';');
      const at = pair.indexOf('=');
      const name = pair.slice(0, at).trim();
      const value = pair.slice(at + 1).trim();
      if (/max-age=0\b/i.test(line) || value === '') jar.delete(name);
      else jar.set(name, value);
    }
    this.#cookies.set(origin, jar);
  }

  get(origin: string, name: string): string | undefined {
    return this.#cookies.get(new URL(origin).origin)?.get(name);
  }

  set(origin: string, name: string, value: string): void {
    const key = new URL(origin).origin;
    const jar = this.#cookies.get(key) ?? new Map<string, string>();
    jar.set(name, value);
    this.#cookies.set(key, jar);
  }

  header(url: string): string {
    const jar = this.#cookies.get(new URL(url).origin);
    return jar ? [...jar].map(([k, v]) => `${k}=${v}`).join('; ') : '';
  }

  async fetch(url: string, init: RequestInit = {}): Promise<Response> {
    const headers = new Headers(init.headers);
    const cookie = this.header(url);
    if (cookie) headers.set('cookie', cookie);
    const res = await fetch(url, { ...init, headers, redirect: 'manual' });
    this.store(url, res);
    return res;
  }
}

export interface DashboardSetup {
  h: Harness;
  a: IdentityProvider;
  b: IdentityProvider;
  close(): Promise<void>;
}

/**
 * The server under test with two identity providers configured (`a` and `b`). Their ports are taken
 * first, since each provider needs the server's redirect URI and the server their issuers.
 */
export async function startDashboard(env: Record<string, string> = {}, options: HarnessOptions = {}) {
  const [reservedA, reservedB] = [await reservePort(), await reservePort()];
  const [portA, portB] = [reservedA.port, reservedB.port];
  const providers = [
    {
      id: 'a',
      issuer: `http://127.0.0.1:${portA}`,
      client_id: 'evalgate',
      client_secret: `secret-${portA}-0123456789abcdef`,
      name: 'Provider A',
    },
    {
      id: 'b',
      issuer: `http://127.0.0.1:${portB}`,
      client_id: 'evalgate',
      client_secret: `secret-${portB}-0123456789abcdef`,
      name: 'Provider B',
    },
  ];
  const h = await startHarness({
    ...options,
    env: { EVALGATE_OIDC_PROVIDERS: JSON.stringify(providers), ...env },
  });
  const base = env.EVALGATE_PUBLIC_URL ?? h.url;
  const a = await startIdentityProvider({
    reserved: reservedA,
    redirectUri: `${base}/dashboard/api/auth/callback/a`,
  });
  const b = await startIdentityProvider({
    reserved: reservedB,
    redirectUri: `${base}/dashboard/api/auth/callback/b`,
  });
  return {
    h,
    a,
    b,
    async close() {
      await h.close();
      await a.close();
      await b.close();
    },
  } satisfies DashboardSetup;
}

/** Follows the identity provider's redirects (manually, cookie jar in hand) until it sends the browser back. */
async function throughProvider(jar: CookieJar, start: string, login: string, back: string): Promise<URL> {
  let url = start;
  for (let hop = 0; hop < 10; hop++) {
    if (url.startsWith(back)) return new URL(url);
    const isForm = new URL(url).pathname.startsWith('/interaction/');
    const res = isForm
      ? await jar.fetch(url, {
          method: 'POST',
          headers: { 'content-type': 'application/x-www-form-urlencoded' },
          body: new URLSearchParams({ login }).toString(),
        })
      : await jar.fetch(url);
    const location = res.headers.get('location');
    if (isForm && res.status === 200) continue;
    if (!location) throw new Error(`${url} answered ${res.status} without a redirect: ${await res.text()}`);
    url = new URL(location, url).href;
  }
  throw new Error('too many redirects at the identity provider');
}

export interface StartedSignIn {
  jar: CookieJar;
  /** The provider's authorization URL the server redirected to. */
  authorize: URL;
}

/** Step 1: the server's login redirect, which sets the login cookie. */
export async function startSignIn(
  h: Harness,
  provider: string,
  jar = new CookieJar(),
): Promise<StartedSignIn> {
  const res = await jar.fetch(`${h.url}/dashboard/api/auth/login/${provider}`);
  expect(res.status).toBe(302);
  return { jar, authorize: new URL(res.headers.get('location') ?? '') };
}

/** Step 2: the login at the provider, up to the callback URL it sends the browser to (not followed). */
export function loginAtProvider(jar: CookieJar, authorize: URL, login: string, back: string): Promise<URL> {
  return throughProvider(jar, authorize.href, login, back);
}

/** Step 3: the callback, as the browser would follow it. */
export function callback(jar: CookieJar, url: URL | string): Promise<Response> {
  return jar.fetch(String(url));
}

/** A whole sign-in over HTTP; returns the jar holding the session cookie and the session's CSRF token. */
export async function signIn(h: Harness, provider: string, login: string) {
  const { jar, authorize } = await startSignIn(h, provider);
  const back = await loginAtProvider(jar, authorize, login, `${h.url}/dashboard/api/auth/callback/`);
  const res = await callback(jar, back);
  expect(res.status).toBe(302);
  expect(res.headers.get('location')).toBe('/');
  expect(jar.get(h.url, 'evalgate_session')).toBeTruthy();
  const me = await jar.fetch(`${h.url}/dashboard/api/me`);
  expect(me.status).toBe(200);
  const body = (await me.json()) as { csrf_token: string; user: { id: string; email: string } };
  return { jar, csrf: body.csrf_token, user: body.user };
}

/** A dashboard call with the session of `jar`, from the dashboard's own origin, with its CSRF token. */
export async function dashboardCall(
  h: Harness,
  session: { jar: CookieJar; csrf: string },
  method: string,
  path: string,
  body?: unknown,
  headers: Record<string, string> = {},
): Promise<{ status: number; body: any; headers: Headers }> {
  const res = await session.jar.fetch(`${h.url}/dashboard/api${path}`, {
    method,
    headers: {
      origin: h.url,
      'x-csrf-token': session.csrf,
      ...(body === undefined ? {} : { 'content-type': 'application/json' }),
      ...headers,
    },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.text();
  return { status: res.status, body: text ? JSON.parse(text) : undefined, headers: res.headers };
}

/** The built web app (npm ci builds it); built here when missing, so that a fresh checkout tests too. */
export function ensureWebBuilt(): void {
  if (fs.existsSync(path.join(WEB_ROOT, 'index.html'))) return;
  execFileSync('npx', ['vite', 'build', '--config', 'web/vite.config.ts'], { stdio: 'ignore' });
}
