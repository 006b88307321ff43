import { createServer } from 'node:net';
import { networkInterfaces } from 'node:os';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SelfAddresses } from '../../src/llm/egress/self-addresses.js';
import { hopIdOf, hopsOf } from '../../src/llm/hop.js';
import { AddressBlockedError, ConnectionLimitError, createUpstream } from '../../src/llm/upstream.js';
import { type MockUpstream, startMockUpstream } from '../fixtures/mock-upstream.js';
import { type Harness, startHarness } from '../helpers/harness.js';
import { waitFor } from '../helpers/wait.js';
import { UPSTREAM } from '../llm/layer-helpers.js';

/** The harness's key pepper, so the hop id of its deployment. */
const OWN_HOP = hopIdOf('test-pepper-0123456789abcdef');
const OTHER_PEPPER = 'another-deployment-pepper-0123456789';
const ask = { messages: [{ role: 'user', content: 'Hi' }] };

const portOf = (url: string) => Number(new URL(url).port);

async function ipv6Loopback(): Promise<boolean> {
  return new Promise((resolve) => {
    const server = createServer();
    server.once('error', () => resolve(false));
    server.listen(0, '::1', () => server.close(() => resolve(true)));
  });
}

/** A non-loopback IPv4 address of this machine, when it has one. */
function interfaceAddress(): string | null {
  for (const entries of Object.values(networkInterfaces())) {
    // Link-local addresses are refused by the upstream policy before anything else.
    const found = (entries ?? []).find(
      (e) => e.family === 'IPv4' && !e.internal && !e.address.startsWith('169.254.'),
    );
    if (found) return found.address;
  }
  return null;
}

/** What a promise rejected with (fails when it resolves). */
async function rejection(promise: Promise<unknown>): Promise<unknown> {
  try {
    await promise;
  } catch (err) {
    return err;
  }
  throw new Error('expected a rejection');
}

describe('a model pointed at the server itself', () => {
  let h: Harness;
  let mock: MockUpstream;

  beforeAll(async () => {
    [h, mock] = await Promise.all([startHarness(), startMockUpstream()]);
  });
  afterAll(async () => {
    await h?.close();
    await mock?.close();
  });

  const register = (label: string, baseUrl: string) =>
    h.call('POST', '/v1/models', {
      body: { label, base_url: baseUrl, upstream_model: 'mock-model', api_key: h.admin.key },
    });

  it("is refused at registration on any of this machine's addresses at the server's port", async () => {
    const port = portOf(h.url);
    const urls = [`${h.url}/v1`, `http://localhost:${port}/v1`, `http://127.0.0.2:${port}/v1/`];
    if (await ipv6Loopback()) urls.push(`http://[::1]:${port}/v1`);
    const local = interfaceAddress();
    if (local) urls.push(`http://${local}:${port}/v1`);
    for (const [i, url] of urls.entries()) {
      const res = await register(`self-${i}`, url);
      expect(res.status, url).toBe(422);
      expect(res.body.detail).toEqual([
        expect.objectContaining({
          loc: ['body', 'base_url'],
          msg: expect.stringMatching(/^base_url refused: .*is this Evalgate server itself/),
        }),
      ]);
    }
    // 0.0.0.0 was refused before (an unspecified address), and still is.
    expect((await register('self-any', `http://0.0.0.0:${port}/v1`)).status).toBe(422);
  });

  it('accepts another local port, and refuses moving a model onto the server with PATCH', async () => {
    const created = await register('local-mock', `http://localhost:${portOf(mock.url)}/v1`);
    expect(created.status).toBe(201);
    const moved = await h.call('PATCH', '/v1/models/local-mock', { body: { base_url: `${h.url}/v1` } });
    expect(moved.status).toBe(422);
    expect(moved.body.detail[0]).toMatchObject({ loc: ['body', 'base_url'] });
    expect(moved.body.detail[0].msg).toMatch(/itself/);
    const call = await h.call('POST', '/v1/chat/completions', { body: { model: 'local-mock', ...ask } });
    expect(call.status).toBe(200);
  });

  it('is refused when connecting, should the address become the server after registration', async () => {
    const late = await startMockUpstream();
    try {
      expect((await register('late', `http://localhost:${portOf(late.url)}/v1`)).status).toBe(201);
      // As if the server now listened there (or the name now led to it): the connector asks at each connect.
      h.services.self.listening(portOf(late.url));
      const res = await h.call('POST', '/v1/chat/completions', { body: { model: 'late', ...ask } });
      expect(res.status).toBe(400);
      expect(res.body.error).toMatchObject({ code: 'bad_request', details: { reason: 'upstream_is_self' } });
      expect(res.body.error.message).toMatch(/is this Evalgate server itself/);
      expect(late.stats.connections).toBe(0);
      expect(h.services.providers.upstreamStats().open).toBeLessThanOrEqual(1);
    } finally {
      h.services.self.stopped(portOf(late.url));
      await late.close();
    }
  });

  it("is refused when connecting to an IP literal, in the operator's provider pools too", async () => {
    const self = new SelfAddresses();
    self.listening(portOf(mock.url));
    const upstream = createUpstream(UPSTREAM, null, self);
    try {
      const target = upstream.target(mock.baseUrl, '/chat/completions', false);
      const err = await rejection(upstream.send(target, { headers: {}, body: '{}' }));
      const cause = err instanceof AddressBlockedError ? err : (err as Error).cause;
      expect(cause).toBeInstanceOf(AddressBlockedError);
      expect((cause as AddressBlockedError).selfPort).toBe(portOf(mock.url));
      expect(upstream.stats()).toMatchObject({ open: 0, waiting: 0 });
    } finally {
      await upstream.close();
    }
  });
});

describe('the hop header', () => {
  let h: Harness;
  /** Another Evalgate deployment (another pepper) in front of the same mock. */
  let other: Harness;
  let mock: MockUpstream;

  beforeAll(async () => {
    [h, other, mock] = await Promise.all([
      startHarness({ env: { EVALGATE_UPSTREAM_RETRY_BASE_MS: '5', EVALGATE_UPSTREAM_RETRY_MAX_MS: '20' } }),
      startHarness({ env: { EVALGATE_KEY_PEPPER: OTHER_PEPPER } }),
      startMockUpstream(),
    ]);
    const models = [
      [h, 'mock', mock.baseUrl, 'mock-model', null],
      [h, 'via-other', `${other.url}/v1`, 'mock', other.admin.key],
      [h, 'round-trip', `${other.url}/v1`, 'back', other.admin.key],
      [other, 'mock', mock.baseUrl, 'mock-model', null],
      [other, 'back', `${h.url}/v1`, 'mock', h.admin.key],
    ] as const;
    for (const [at, label, baseUrl, upstreamModel, apiKey] of models) {
      const res = await at.call('POST', '/v1/models', {
        body: { label, base_url: baseUrl, upstream_model: upstreamModel, api_key: apiKey },
      });
      expect(res.status, label).toBe(201);
    }
  });
  afterAll(async () => {
    await h?.close();
    await other?.close();
    await mock?.close();
  });

  const chat = (at: Harness, model: string, headers: Record<string, string> = {}, stream = false) =>
    at.call('POST', '/v1/chat/completions', { body: { model, ...ask, stream }, headers });

  it('is one id per deployment: the same for every replica, another for another pepper', () => {
    expect(OWN_HOP).toMatch(/^[0-9a-f]{16}$/);
    // Pinned: HMAC-SHA256(pepper, 'evalgate-hop'), first 16 hex digits.
    expect(OWN_HOP).toBe('001dffa1ebd248e8');
    expect(hopIdOf(OTHER_PEPPER)).not.toBe(OWN_HOP);
    expect(hopsOf(`a1, ${OWN_HOP} ,,bad value,x`)).toEqual(['a1', OWN_HOP, 'x']);
  });

  it('is sent on every upstream request, after the hops the request came through', async () => {
    mock.reset();
    expect((await chat(h, 'mock')).status).toBe(200);
    expect((await chat(h, 'mock', { 'X-Evalgate-Hop': 'feedfacefeedface' }, true)).status).toBe(200);
    expect(mock.requests.map((r) => r.headers['x-evalgate-hop'])).toEqual([
      OWN_HOP,
      `feedfacefeedface, ${OWN_HOP}`,
    ]);
  });

  it("refuses with 508 a request that carries this deployment's id", async () => {
    mock.reset();
    for (const hop of [OWN_HOP, `feedfacefeedface, ${OWN_HOP}`]) {
      const res = await chat(h, 'mock', { 'X-Evalgate-Hop': hop });
      expect(res.status, hop).toBe(508);
      expect(res.body.error).toMatchObject({ code: 'loop_detected', details: { hops: hopsOf(hop) } });
    }
    expect(mock.stats.requests).toBe(0);
  });

  it('lets a chain of two deployments through, and stops a loop between them at once', async () => {
    mock.reset();
    expect((await chat(h, 'via-other')).status).toBe(200);
    expect(mock.requests.map((r) => r.headers['x-evalgate-hop'])).toEqual([
      `${OWN_HOP}, ${hopIdOf(OTHER_PEPPER)}`,
    ]);
    // h → other → h: h refuses what it sent, other passes the 508 on without retrying, and so does h.
    for (const stream of [false, true]) {
      const loop = await chat(h, 'round-trip', {}, stream);
      expect(loop.status).toBe(508);
      expect(loop.body.error).toMatchObject({ code: 'loop_detected', details: { upstream_status: 508 } });
    }
    expect(mock.stats.requests).toBe(1);
  });
});

describe('the connections of all upstream pools together', () => {
  it('never exceed EVALGATE_UPSTREAM_MAX_CONNECTIONS', async () => {
    const mocks = await Promise.all([startMockUpstream(), startMockUpstream()]);
    const h = await startHarness({ env: { EVALGATE_UPSTREAM_MAX_CONNECTIONS: '4' } });
    const controllers: AbortController[] = [];
    try {
      for (const [i, m] of mocks.entries()) {
        m.fail({ hang: true, times: 100 });
        const res = await h.call('POST', '/v1/models', {
          body: { label: `hang-${i}`, base_url: m.baseUrl, upstream_model: 'mock-model' },
        });
        expect(res.status).toBe(201);
      }
      const calls = Array.from({ length: 20 }, (_, i) => {
        const controller = new AbortController();
        controllers.push(controller);
        return fetch(`${h.url}/v1/chat/completions`, {
          method: 'POST',
          headers: { authorization: `Bearer ${h.admin.key}`, 'content-type': 'application/json' },
          body: JSON.stringify({ model: `hang-${i % 2}`, ...ask }),
          signal: controller.signal,
        }).catch((err: unknown) => err);
      });
      const seen = () => mocks.reduce((n, m) => n + m.stats.connections, 0);
      await waitFor(() => mocks.reduce((n, m) => n + m.stats.requests, 0) >= 4, 10_000, '4 hanging calls');
      // The other calls wait for a socket; give them time to (wrongly) open more.
      await new Promise((r) => setTimeout(r, 300));
      expect(seen()).toBe(4);
      expect(h.services.providers.upstreamStats()).toMatchObject({ open: 4, waiting: 16 });
      for (const controller of controllers) controller.abort();
      await Promise.all(calls);
      await waitFor(() => h.services.providers.upstreamStats().waiting === 0, 5_000, 'no waiting connect');
      expect(h.services.providers.upstreamStats().open).toBeLessThanOrEqual(4);
    } finally {
      for (const controller of controllers) controller.abort();
      await Promise.all(mocks.map((m) => m.close()));
      await h.close();
    }
  });

  it('fails a connect that waited the whole connect timeout, as retryable, without opening a socket', async () => {
    const [busy, idle] = await Promise.all([startMockUpstream(), startMockUpstream()]);
    busy.fail({ hang: true });
    const upstream = createUpstream({ ...UPSTREAM, maxConnections: 1, connectTimeoutMs: 200 }, null);
    const holder = new AbortController();
    try {
      const held = upstream
        .send(upstream.target(busy.baseUrl, '/chat/completions', false), {
          headers: {},
          body: '{}',
          signal: holder.signal,
        })
        .catch((err: unknown) => err);
      await busy.until(() => busy.stats.requests === 1);
      const t0 = Date.now();
      const err = await rejection(
        upstream.send(upstream.target(idle.baseUrl, '/chat/completions', false), { headers: {}, body: '{}' }),
      );
      expect(err).toBeInstanceOf(ConnectionLimitError);
      expect(Date.now() - t0).toBeGreaterThanOrEqual(150);
      expect(idle.stats.connections).toBe(0);
      expect(upstream.stats()).toMatchObject({ open: 1, waiting: 0 });
      holder.abort();
      await held;
      // The pool may keep a fresh idle connection to the busy origin: still within the bound.
      expect(upstream.stats().open).toBeLessThanOrEqual(1);
    } finally {
      holder.abort();
      await upstream.close();
      await Promise.all([busy.close(), idle.close()]);
    }
  });
});
