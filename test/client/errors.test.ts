import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  APIConnectionError,
  APIConnectionTimeoutError,
  APIError,
  AuthenticationError,
  ConflictError,
  type Evalgate,
  EvalgateError,
  InternalServerError,
  NotFoundError,
  PermissionDeniedError,
  RateLimitError,
  type RunEvent,
  UnprocessableEntityError,
  WaitTimeoutError,
} from '../../src/client/index.js';
import { testDbKind } from '../helpers/databases.js';
import { type Harness, startHarness } from '../helpers/harness.js';
import { unusedPort } from '../helpers/ports.js';
import { clientOf, type LocalServer, localServer } from './helpers.js';

// Each error class provoked for real. The client's error mapping does not depend on the database, so
// this runs once, on SQLite.

/** The rejection of `promise`, which must reject. */
async function failure(promise: Promise<unknown>): Promise<EvalgateError> {
  try {
    await promise;
  } catch (err) {
    expect(err).toBeInstanceOf(EvalgateError);
    return err as EvalgateError;
  }
  throw new Error('expected a rejection');
}

describe.skipIf(testDbKind() === 'postgres')('client errors', () => {
  let h: Harness;
  let limited: Harness;
  let client: Evalgate;
  const servers: LocalServer[] = [];

  beforeAll(async () => {
    // Runs are not executed here: creating them is all these tests need.
    h = await startHarness({ env: { EVALGATE_SERVE_EXECUTES: '0' } });
    limited = await startHarness({
      env: {
        EVALGATE_RATE_LIMIT_PER_MINUTE: '6',
        EVALGATE_RATE_LIMIT_BURST: '1',
        EVALGATE_SERVE_EXECUTES: '0',
      },
    });
    client = clientOf(h);
    await client.containers.create({ label: 'support' });
    await client.models.register({ label: 'judge', base_url: 'http://127.0.0.1:9/v1' });
    await client.evaluators.create({ type: 'judge', name: 'exact', model: 'judge', prompt: '{{output}}' });
    await client.datasets.create({ label: 'qa', items: [{ input: 'q', output: 'a', expected: 'a' }] });
  });
  afterAll(async () => {
    await h?.close();
    await limited?.close();
    for (const s of servers) await s.close();
  });

  it('401 AuthenticationError for an unknown key', async () => {
    const err = await failure(clientOf(h, { apiKey: 'eg_not-a-real-key' }).evaluators.list());
    expect(err).toBeInstanceOf(AuthenticationError);
    expect(err).toBeInstanceOf(APIError);
    expect(err).toMatchObject({ status: 401, code: 'invalid_api_key' });
    expect(err.requestId).toMatch(/^[\w-]{36}$/);
    expect((err as APIError).headers.get('content-type')).toContain('json');
  });

  it('403 PermissionDeniedError for a key lacking the permission', async () => {
    const reader = clientOf(h, { apiKey: (await h.key(['evaluators:read'])).key });
    const err = await failure(reader.runs.list());
    expect(err).toBeInstanceOf(PermissionDeniedError);
    expect(err).toMatchObject({
      status: 403,
      code: 'permission_denied',
      details: { required: 'evaluation:read' },
    });
  });

  it('404 NotFoundError', async () => {
    const err = await failure(client.runs.get('run_does_not_exist'));
    expect(err).toBeInstanceOf(NotFoundError);
    expect(err).toMatchObject({ status: 404, code: 'not_found', details: { ref: 'run_does_not_exist' } });
  });

  it('409 ConflictError for an Idempotency-Key reused with another body', async () => {
    const source = { type: 'dataset' as const, dataset: 'qa' };
    const body = { container: 'support', evaluators: ['exact'], sample: source, ground_truth: source };
    const first = await client.runs.create(body, { idempotencyKey: 'nightly-1' });
    const same = await client.runs.create(body, { idempotencyKey: 'nightly-1' });
    expect(same.id).toBe(first.id);
    const err = await failure(
      client.runs.create({ ...body, metadata: { other: true } }, { idempotencyKey: 'nightly-1' }),
    );
    expect(err).toBeInstanceOf(ConflictError);
    expect(err).toMatchObject({ status: 409, code: 'idempotency_key_reused' });
  });

  it('WaitTimeoutError for a run that does not finish in time; its events say nothing executes it', async () => {
    const source = { type: 'dataset' as const, dataset: 'qa' };
    const run = await client.runs.create({ container: 'support', evaluators: ['exact'], sample: source });
    const statuses: string[] = [];
    const err = await failure(
      client.runs.wait(run.id, { timeoutMs: 300, onStatus: (s) => statuses.push(s) }),
    );
    expect(err).toBeInstanceOf(WaitTimeoutError);
    expect(err).toMatchObject({ runId: run.id, lastStatus: 'queued', code: 'wait_timeout' });
    expect(statuses).toEqual(['queued']);
    const events: RunEvent[] = [];
    for await (const e of client.runs.stream(run.id)) {
      events.push(e);
      if (e.event === 'queue') break;
    }
    expect(events.find((e) => e.event === 'queue')?.data).toMatchObject({
      waiting_for_worker: true,
      live_workers: 0,
    });
    await expect(client.runs.stream('run_nope').next()).rejects.toBeInstanceOf(NotFoundError);
    await expect(client.datasets.upload('/nonexistent/rows.jsonl', { label: 'x' })).rejects.toThrow(
      /No such file/,
    );
  });

  it('422 UnprocessableEntityError with the detail list', async () => {
    const err = await failure(
      client.evaluators.create({ type: 'judge', pass_threshold: 'high' as unknown as number }),
    );
    expect(err).toBeInstanceOf(UnprocessableEntityError);
    const detail = (err as UnprocessableEntityError).detail;
    expect(err).toMatchObject({ status: 422, code: 'validation_error' });
    expect(detail.length).toBeGreaterThanOrEqual(1);
    for (const d of detail) expect(Object.keys(d).sort()).toEqual(['loc', 'msg', 'type']);
    expect(detail.map((d) => d.loc.join('.'))).toContain('body.pass_threshold');
    expect(err.message).toContain('body.pass_threshold');
  });

  it('429 RateLimitError with retryAfter in seconds', async () => {
    const key = await limited.key();
    const tight = clientOf(limited, { apiKey: key.key, maxRetries: 0 });
    await tight.evaluators.list();
    const err = await failure(tight.evaluators.list());
    expect(err).toBeInstanceOf(RateLimitError);
    expect(err).toMatchObject({ status: 429, code: 'rate_limit_exceeded' });
    // 6 a minute with a burst of 1: the next request is allowed 10 s after the first.
    expect((err as RateLimitError).retryAfter).toBeGreaterThan(5);
    expect((err as RateLimitError).retryAfter).toBeLessThanOrEqual(10);
    expect((err as RateLimitError).headers.get('x-ratelimit-remaining')).toBe('0');
  });

  it('a Retry-After longer than a minute is not waited for', async () => {
    const server = await localServer((_req, res) => {
      res.writeHead(429, { 'content-type': 'application/json', 'retry-after': '3600' });
      res.end(JSON.stringify({ error: { code: 'rate_limit_exceeded', message: 'later' } }));
    });
    servers.push(server);
    const started = Date.now();
    const err = await failure(clientOf(h, { baseURL: server.url }).health());
    expect(err).toBeInstanceOf(RateLimitError);
    expect((err as RateLimitError).retryAfter).toBe(3600);
    expect(server.requests).toBe(1);
    expect(Date.now() - started).toBeLessThan(1000);
  });

  it('InternalServerError for 5xx, APIError for other statuses, whatever the body', async () => {
    const server = await localServer((req, res) => {
      if (req.url === '/healthz') {
        res.writeHead(502, { 'content-type': 'text/html' });
        res.end('<html>Bad gateway</html>');
      } else {
        res.writeHead(418, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ error: { code: 'teapot', message: 'I am a teapot' } }));
      }
    });
    servers.push(server);
    const proxied = clientOf(h, { baseURL: server.url, maxRetries: 0 });
    const bad = await failure(proxied.health());
    expect(bad).toBeInstanceOf(InternalServerError);
    expect(bad.status).toBe(502);
    expect(bad.message).toContain('Bad gateway');
    const other = await failure(proxied.evaluators.list());
    expect(other.constructor).toBe(APIError);
    expect(other).toMatchObject({ status: 418, code: 'teapot', message: '418 I am a teapot' });
  });

  it('APIConnectionError for a closed port', async () => {
    // Below the ephemeral range: no other test's listen(0) or outgoing connection takes it meanwhile.
    const port = await unusedPort();
    const err = await failure(clientOf(h, { baseURL: `http://127.0.0.1:${port}`, maxRetries: 0 }).health());
    expect(err).toBeInstanceOf(APIConnectionError);
    expect(err).not.toBeInstanceOf(APIConnectionTimeoutError);
    expect(err.status).toBeUndefined();
    expect(err.message).toContain('ECONNREFUSED');
  });

  it('APIConnectionTimeoutError against a server that never answers; a GET is retried, a POST is not', async () => {
    const silent = await localServer(() => {});
    servers.push(silent);
    const slow = clientOf(h, { baseURL: silent.url, timeoutMs: 200, maxRetries: 1 });
    const started = Date.now();
    const err = await failure(slow.evaluators.list());
    expect(err).toBeInstanceOf(APIConnectionTimeoutError);
    expect(err).toBeInstanceOf(APIConnectionError);
    expect(Date.now() - started).toBeGreaterThanOrEqual(400);
    expect(silent.requests).toBe(2);
    // Headers, then a body that never ends: the timer covers the body too.
    const stalling = await localServer((_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.write('{"object":"list",');
    });
    servers.push(stalling);
    const stalled = await failure(
      clientOf(h, { baseURL: stalling.url, timeoutMs: 200, maxRetries: 1 }).runs.get('r'),
    );
    expect(stalled).toBeInstanceOf(APIConnectionTimeoutError);
    expect(stalling.requests).toBe(2);
    // Creating an evaluator is not idempotent: after a timeout the server may have acted on it.
    const post = await failure(slow.evaluators.create({ type: 'code', source: 'x' }));
    expect(post).toBeInstanceOf(APIConnectionTimeoutError);
    expect(silent.requests).toBe(3);
  });
});
