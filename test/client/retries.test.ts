import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseRetryAfter } from '../../src/client/errors.js';
import { InternalServerError } from '../../src/client/index.js';
import { backoffMs, delayAfter } from '../../src/client/retry.js';
import { testDbKind } from '../helpers/databases.js';
import { type Harness, startHarness } from '../helpers/harness.js';
import { clientOf, type LocalServer, localServer } from './helpers.js';

// Retries depend on statuses and timing, not on the database: once, on SQLite.

/** A fetch that records the status and Retry-After of every response, with when it arrived. */
function recordingFetch() {
  const seen: { status: number; retryAfter: string | null; at: number }[] = [];
  const wrapped: typeof fetch = async (input, init) => {
    const res = await fetch(input, init);
    seen.push({ status: res.status, retryAfter: res.headers.get('retry-after'), at: Date.now() });
    return res;
  };
  return { seen, fetch: wrapped };
}

describe.skipIf(testDbKind() === 'postgres')('client retries', () => {
  let limited: Harness;
  const servers: LocalServer[] = [];

  beforeAll(async () => {
    // 30 a minute with a burst of 1: one request every 2 s.
    limited = await startHarness({
      env: {
        EVALGATE_RATE_LIMIT_PER_MINUTE: '30',
        EVALGATE_RATE_LIMIT_BURST: '1',
        EVALGATE_SERVE_EXECUTES: '0',
      },
    });
  });
  afterAll(async () => {
    await limited?.close();
    for (const s of servers) await s.close();
  });

  async function server(handler: Parameters<typeof localServer>[0]): Promise<LocalServer> {
    const s = await localServer(handler);
    servers.push(s);
    return s;
  }

  it('waits out a 429 for as long as Retry-After says, then succeeds', { timeout: 20_000 }, async () => {
    const recorder = recordingFetch();
    const client = clientOf(limited, { apiKey: (await limited.key()).key, fetch: recorder.fetch });
    await client.containers.list();
    const started = Date.now();
    const page = await client.containers.list();
    const elapsed = Date.now() - started;
    expect(page.object).toBe('list');
    const statuses = recorder.seen.map((s) => s.status);
    expect(statuses).toEqual([200, 429, 200]);
    const retryAfter = Number(recorder.seen[1]!.retryAfter);
    expect(retryAfter).toBeGreaterThanOrEqual(1);
    // From the 429's arrival to the retry's answer, and over the whole call.
    expect(recorder.seen[2]!.at - recorder.seen[1]!.at).toBeGreaterThanOrEqual(retryAfter * 1000);
    expect(elapsed).toBeGreaterThanOrEqual(retryAfter * 1000);
  });

  it('retries a 503 (a flaky proxy) and returns the answer that follows', async () => {
    const flaky = await server((_req, res, index) => {
      if (index < 2) {
        res.writeHead(503, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ error: { code: 'upstream_unavailable', message: 'try again' } }));
        return;
      }
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end('{"ok":true}');
    });
    const started = Date.now();
    expect(await clientOf(limited, { baseURL: flaky.url }).health()).toEqual({ ok: true });
    expect(flaky.requests).toBe(3);
    // Two back-offs: about 0.5 s and 1 s, less up to a quarter each.
    expect(Date.now() - started).toBeGreaterThanOrEqual(0.75 * 500 + 0.75 * 1000);
  });

  it('honours Retry-After on a 503 as an HTTP date too', async () => {
    const flaky = await server((_req, res, index) => {
      if (index === 0) {
        res.writeHead(503, { 'retry-after': new Date(Date.now() + 2000).toUTCString() });
        res.end();
        return;
      }
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end('{"ok":true}');
    });
    const started = Date.now();
    expect(await clientOf(limited, { baseURL: flaky.url }).health()).toEqual({ ok: true });
    // An HTTP date has whole seconds: the wait is at least 1 s of the 2 asked for.
    expect(Date.now() - started).toBeGreaterThanOrEqual(1000);
  });

  it('reports an unhealthy server (503) as {ok: false}', async () => {
    const sick = await server((_req, res) => {
      res.writeHead(503, { 'content-type': 'application/json' });
      res.end('{"ok":false}');
    });
    expect(await clientOf(limited, { baseURL: sick.url, maxRetries: 1 }).health()).toEqual({ ok: false });
    expect(sick.requests).toBe(2);
  });

  it('gives up after maxRetries with the last error', async () => {
    const down = await server((_req, res) => {
      res.writeHead(504);
      res.end();
    });
    const err = await clientOf(limited, { baseURL: down.url, maxRetries: 1 })
      .health()
      .catch((e) => e);
    expect(err).toBeInstanceOf(InternalServerError);
    expect(err.status).toBe(504);
    expect(down.requests).toBe(2);
  });

  it('retries a 500 of a read, not of a non-idempotent create', async () => {
    const broken = await server((_req, res) => {
      res.writeHead(500, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ error: { code: 'internal_error', message: 'boom' } }));
    });
    const client = clientOf(limited, { baseURL: broken.url, maxRetries: 1 });
    await expect(client.containers.get('x')).rejects.toBeInstanceOf(InternalServerError);
    expect(broken.requests).toBe(2);
    await expect(client.containers.create({ label: 'x' })).rejects.toBeInstanceOf(InternalServerError);
    expect(broken.requests).toBe(3);
  });

  it('computes delays: jittered back-off, Retry-After in seconds or as a date', () => {
    expect(backoffMs(0, () => 0)).toBe(500);
    expect(backoffMs(0, () => 1)).toBe(375);
    expect(backoffMs(3, () => 0)).toBe(4000);
    expect(backoffMs(10, () => 0)).toBe(8000);
    expect(parseRetryAfter('7')).toBe(7);
    expect(parseRetryAfter('0.5')).toBe(0.5);
    expect(parseRetryAfter(new Date(10_000).toUTCString(), 4000)).toBe(6);
    expect(parseRetryAfter('soon')).toBeNull();
    const headers = (value: string) => new Headers({ 'retry-after': value });
    expect(delayAfter(headers('2'), 0, () => 0)).toBe(2000);
    expect(delayAfter(headers('120'), 0)).toBeNull();
    expect(delayAfter(new Headers(), 1, () => 0)).toBe(1000);
  });
});
