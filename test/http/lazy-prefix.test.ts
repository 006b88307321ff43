// serveLazily on bare Fastify instances, then on the app (the harness's database).
import Fastify, { type FastifyInstance } from 'fastify';
import { afterEach, describe, expect, it } from 'vitest';
import { isDashboardPage } from '../../src/dashboard/api-prefix.js';
import { isUnder, serveLazily } from '../../src/http/lazy-prefix.js';
import { startHarness } from '../helpers/harness.js';

describe('isUnder', () => {
  it('takes the prefix itself and the paths below it, before any query, percent-decoded', () => {
    expect(isUnder('/dashboard/api', '/dashboard/api')).toBe(true);
    expect(isUnder('/dashboard/api', '/dashboard/api/')).toBe(true);
    expect(isUnder('/dashboard/api', '/dashboard/api/me?x=1')).toBe(true);
    expect(isUnder('/dashboard/api', '/dashboard/api?x=/')).toBe(true);
    expect(isUnder('/dashboard/api', '/d%61shboard/api/me')).toBe(true);
    expect(isUnder('/dashboard/api', '/dashboard/apix')).toBe(false);
    expect(isUnder('/dashboard/api', '/dashboard')).toBe(false);
    expect(isUnder('/dashboard/api', '/v1/models?next=/dashboard/api')).toBe(false);
    expect(isUnder('/dashboard/api', '/dashboard%2Fapi/me')).toBe(false);
    expect(isUnder('/dashboard/api', '/dashboard/api/%E0%A4%A')).toBe(true);
    expect(isUnder('/dashboard/api', '/dashboard/api#x?y')).toBe(true);
    expect(isUnder('/dashboard/api', '/dashboard/a#pi')).toBe(false);
    expect(isUnder('/dashboard/api', '/dashboard/api?x#/y')).toBe(true);
  });
});

describe('isDashboardPage', () => {
  it("takes the root and the paths whose first segment is one of the web app's", () => {
    for (const page of ['/', '/signin', '/assets/app.js', '/invite/abc', '/orgs', '/projects/p/logs']) {
      expect(isDashboardPage(page), page).toBe(true);
    }
    for (const other of ['', '/v1/models', '/signing', '/assetsx/a', '//signin', '/docs', '/healthz']) {
      expect(isDashboardPage(other), other).toBe(false);
    }
  });
});

describe('serveLazily', () => {
  let app: FastifyInstance | null = null;
  afterEach(async () => {
    await app?.close();
    app = null;
  });

  async function start() {
    const built: FastifyInstance[] = [];
    const closed: FastifyInstance[] = [];
    const server = Fastify();
    app = server;
    serveLazily(server, '/lazy', async () => {
      const child = Fastify();
      child.get('/lazy/hello', async () => ({ from: 'child' }));
      child.addHook('onClose', (instance, done) => {
        closed.push(instance);
        done();
      });
      built.push(child);
      return child;
    });
    server.get('/hello', async () => ({ from: 'app' }));
    const url = await server.listen({ port: 0, host: '127.0.0.1' });
    return { url, built, closed };
  }

  it('builds the instance on the first request under the prefix only, once, and routes to it', async () => {
    const { url, built } = await start();
    expect(await (await fetch(`${url}/hello`)).json()).toEqual({ from: 'app' });
    expect(built).toHaveLength(0);
    const answers = await Promise.all([1, 2, 3].map(() => fetch(`${url}/lazy/hello`)));
    for (const res of answers) expect(await res.json()).toEqual({ from: 'child' });
    expect(built).toHaveLength(1);
    expect((await fetch(`${url}/lazy/nope`)).status).toBe(404);
    expect((await fetch(`${url}/lazyx`)).status).toBe(404);
    expect(built).toHaveLength(1);
  });

  it('closes the instance with the app', async () => {
    const { url, built, closed } = await start();
    await fetch(`${url}/lazy/hello`);
    expect(closed).toHaveLength(0);
    await app!.close();
    app = null;
    expect(closed).toEqual(built);
  });
});

describe('the app', () => {
  it('registers the dashboard API, its pages and /docs on their first request, and answers them as before', async () => {
    const h = await startHarness();
    try {
      const has = (url: string) => h.app.server.hasRoute({ method: 'GET', url });
      expect(has('/healthz')).toBe(true);
      expect(has('/dashboard/api/auth/providers')).toBe(false);
      expect(has('/docs/json')).toBe(false);
      expect(has('/signin')).toBe(false);
      // The web app's pages: its index.html when the dashboard is built, else the 503 that says so.
      const page = await h.call('GET', '/signin', { key: null, unchecked: true });
      expect([200, 503]).toContain(page.status);
      expect(page.headers.get('content-type')).toMatch(/^text\/(html|plain)/);
      const providers = await h.call('GET', '/dashboard/api/auth/providers', { key: null, unchecked: true });
      expect(providers.status).toBe(200);
      const me = await h.call('GET', '/dashboard/api/me', { key: null, unchecked: true });
      expect(me.status).toBe(401);
      expect(me.body.error.code).toBe('not_signed_in');
      const wrongMethod = await h.call('PUT', '/dashboard/api/auth/providers', {
        key: null,
        unchecked: true,
      });
      expect(wrongMethod.status).toBe(405);
      expect(wrongMethod.headers.get('allow')).toBe('GET, HEAD');
      const docs = await h.call('GET', '/docs/json', { key: null, unchecked: true });
      const document = await h.call('GET', '/openapi.json', { key: null, unchecked: true });
      expect(docs.status).toBe(200);
      expect(docs.body).toEqual(document.body);
      // Still not on the app itself: served by the instances made for them.
      expect(has('/dashboard/api/auth/providers')).toBe(false);
      expect(has('/signin')).toBe(false);
    } finally {
      await h.close();
    }
  });
});
