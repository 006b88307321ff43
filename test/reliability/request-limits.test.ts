import fs from 'node:fs';
import net from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config.js';
import { rawExchange } from '../hardening/raw-http.js';
import { type Harness, startHarness } from '../helpers/harness.js';
import { waitFor } from '../helpers/wait.js';

const openDescriptors = () => fs.readdirSync('/proc/self/fd').length;

interface SlowClient {
  socket: net.Socket;
  /** Everything the server wrote, once it closed the connection. */
  closed: Promise<{ text: string; ms: number }>;
}

/** A client that sends its headers, then a 100,000-byte body one byte every `everyMs`. */
function slowBody(url: string, key: string, everyMs: number): SlowClient {
  const { hostname, port } = new URL(url);
  const socket = net.connect(Number(port), hostname);
  const started = Date.now();
  const chunks: Buffer[] = [];
  socket.on('data', (d) => chunks.push(d));
  socket.on('error', () => {});
  socket.write(
    `POST /v1/models HTTP/1.1\r\nHost: ${hostname}\r\nAuthorization: Bearer ${key}\r\n` +
      'Content-Type: application/json\r\nContent-Length: 100000\r\n\r\n{',
  );
  const drip = setInterval(() => {
    if (!socket.destroyed) socket.write(' ');
  }, everyMs);
  const closed = new Promise<{ text: string; ms: number }>((resolve) => {
    socket.on('close', () => {
      clearInterval(drip);
      resolve({ text: Buffer.concat(chunks).toString('utf8'), ms: Date.now() - started });
    });
  });
  return { socket, closed };
}

const envelopeOf = (text: string) => JSON.parse(text.slice(text.indexOf('\r\n\r\n') + 4));

describe('request limits: defaults', () => {
  it('gives a body 60 s after its headers by default, 30 s to the headers, and caps keys and connections', () => {
    const config = loadConfig({ EVALGATE_DATA_DIR: '/tmp/evalgate-defaults' });
    expect(config.requests.bodyTimeoutMs).toBe(60_000);
    expect(config.requests.headersTimeoutMs).toBe(30_000);
    expect(config.requests.keyConcurrency).toBe(256);
    expect(config.requests.maxConnections).toBe(4096);
    expect(() => loadConfig({ EVALGATE_BODY_TIMEOUT_MS: 'soon' })).toThrow(/EVALGATE_BODY_TIMEOUT_MS/);
  });
});

describe('request limits: slow bodies, per-key concurrency, connection cap', () => {
  let h: Harness;
  beforeAll(async () => {
    h = await startHarness({
      env: {
        EVALGATE_BODY_TIMEOUT_MS: '1500',
        EVALGATE_KEY_CONCURRENCY: '40',
        EVALGATE_MAX_CONNECTIONS: '200',
      },
    });
  });
  afterAll(async () => {
    await h.close();
  });

  it('cuts 100 slow-body clients at the deadline with a 408 envelope and gives the descriptors back', async () => {
    const keys = await Promise.all(Array.from({ length: 5 }, () => h.key(['*'])));
    // Warm-up requests, so that lazily opened files (the database pool's connections) are in the baseline.
    await Promise.all(
      Array.from({ length: 40 }, (_, i) => h.call('GET', '/v1/models', { key: keys[i % 5]!.key })),
    );
    const before = openDescriptors();
    const clients = Array.from({ length: 100 }, (_, i) => slowBody(h.url, keys[i % 5]!.key, 200));
    await waitFor(() => openDescriptors() >= before + 100, 5000);
    const during = openDescriptors();
    const results = await Promise.all(clients.map((c) => c.closed));
    for (const r of results) {
      expect(r.text).toMatch(/^HTTP\/1\.1 408 /);
      expect(r.text.toLowerCase()).toContain('connection: close');
      const body = envelopeOf(r.text);
      expect(body.error.code).toBe('request_timeout');
      expect(body.error.details).toMatchObject({ reason: 'body_timeout', timeout_ms: 1500 });
      // Cut at the deadline: not before it, and well before a client would have sent its body.
      expect(r.ms).toBeGreaterThanOrEqual(1400);
      expect(r.ms).toBeLessThan(5000);
    }
    await waitFor(() => openDescriptors() <= before + 2, 5000);
    expect(during).toBeGreaterThanOrEqual(before + 100);
    // The server still answers.
    expect((await h.call('GET', '/v1/models')).status).toBe(200);
  });

  it('answers a connection past the cap with a 503 envelope and closes it', async () => {
    const idle: net.Socket[] = [];
    for (let i = 0; i < 200; i++) {
      const s = net.connect(Number(new URL(h.url).port), '127.0.0.1');
      s.on('error', () => {});
      idle.push(s);
    }
    await Promise.all(idle.map((s) => new Promise((r) => s.once('connect', r))));
    await waitFor(() => h.app.server.server.connections > 0, 2000).catch(() => {});
    const over = await rawExchange(h.url, 'GET /v1/models HTTP/1.1\r\nHost: x\r\n\r\n');
    expect(over.status).toBe(503);
    expect(JSON.parse(over.body).error.code).toBe('too_many_connections');
    for (const s of idle) s.destroy();
    await waitFor(async () => (await h.call('GET', '/v1/models')).status === 200, 5000);
  });

  it('refuses a model credential with a line break at registration, naming the field', async () => {
    for (const api_key of ['sk-abc\r\nX-Injected: 1', 'sk-abc def', 'sk-ключ', 'sk-\tx']) {
      const r = await h.call('POST', '/v1/models', {
        body: {
          label: `m-${Math.random().toString(36).slice(2)}`,
          base_url: 'http://127.0.0.1:9/v1',
          api_key,
        },
      });
      expect(r.status).toBe(422);
      expect(r.body.detail[0].loc).toEqual(['body', 'api_key']);
      expect(r.body.detail[0].msg).toMatch(/HTTP header/);
    }
    const created = await h.call('POST', '/v1/models', {
      body: { label: 'good-key', base_url: 'http://127.0.0.1:9/v1', api_key: 'sk-good_0123' },
    });
    expect(created.status).toBe(201);
    const patched = await h.call('PATCH', `/v1/models/${created.body.id}`, {
      body: { api_key: 'sk-bad\nvalue' },
    });
    expect(patched.status).toBe(422);
  });
});

describe('request limits: per-key concurrency', () => {
  let h: Harness;
  beforeAll(async () => {
    // A body deadline far beyond the test, so the held requests stay held however loaded the machine is.
    h = await startHarness({
      env: { EVALGATE_BODY_TIMEOUT_MS: '60000', EVALGATE_KEY_CONCURRENCY: '40' },
    });
  });
  afterAll(async () => {
    await h.close();
  });

  it('refuses a key past its concurrent requests with a 429 envelope, then serves it again', async () => {
    const k = await h.key(['*']);
    const held = Array.from({ length: 40 }, () => slowBody(h.url, k.key, 300));
    await waitFor(async () => {
      const r = await h.call('GET', '/v1/models', { key: k.key });
      return r.status === 429;
    }, 20_000);
    const refused = await h.call('GET', '/v1/models', { key: k.key });
    expect(refused.status).toBe(429);
    expect(refused.body).toMatchObject({
      error: { code: 'rate_limit_exceeded', details: { reason: 'concurrency', limit: 40 } },
    });
    expect(refused.headers.get('retry-after')).toBe('1');
    // Another key is not held back by this one.
    expect((await h.call('GET', '/v1/models')).status).toBe(200);
    // The held clients go away: their slots come back.
    for (const c of held) c.socket.destroy();
    await Promise.all(held.map((c) => c.closed));
    await waitFor(async () => (await h.call('GET', '/v1/models', { key: k.key })).status === 200, 10_000);
  }, 40_000);
});
