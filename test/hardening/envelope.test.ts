import net from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Harness, startHarness } from '../helpers/harness.js';
import { rawExchange } from './raw-http.js';

/**
 * Issue 15, item 3: every response the server writes is the contract's envelope, including those to
 * requests Node's HTTP parser refuses before Fastify sees them, and wrong methods answer 405 with Allow.
 */
let h: Harness;
beforeAll(async () => {
  h = await startHarness();
});
afterAll(async () => {
  await h.close();
});

const ENVELOPE_KEYS = ['code', 'message', 'details'];

function expectEnvelope(body: string, code: string, reason?: string): any {
  const parsed = JSON.parse(body);
  expect(Object.keys(parsed)).toEqual(['error']);
  expect(ENVELOPE_KEYS).toEqual(expect.arrayContaining(Object.keys(parsed.error)));
  expect(parsed.error.code).toBe(code);
  expect(typeof parsed.error.message).toBe('string');
  if (reason !== undefined) expect(parsed.error.details.reason).toBe(reason);
  return parsed;
}

describe('requests the HTTP parser refuses', () => {
  it('answers headers past the size limit with 400 bad_request in the envelope (not Node’s 431 body)', async () => {
    const res = await rawExchange(
      h.url,
      `GET /v1/containers HTTP/1.1\r\nHost: x\r\nX-Big: ${'a'.repeat(20_000)}\r\n\r\n`,
    );
    expect(res.status).toBe(400);
    expect(res.headers['content-type']).toBe('application/json; charset=utf-8');
    expect(res.headers.connection).toBe('close');
    expect(Number(res.headers['content-length'])).toBe(Buffer.byteLength(res.body));
    const body = expectEnvelope(res.body, 'bad_request', 'request_header_fields_too_large');
    expect(body.error.details.limit_bytes).toBeGreaterThan(0);
  });

  it('answers a control character in a header value or name with the envelope', async () => {
    for (const header of ['X-Test: a\u0001b', 'X-Te\u0001st: a', 'X-Test: a\u007fb']) {
      const res = await rawExchange(h.url, `GET /healthz HTTP/1.1\r\nHost: x\r\n${header}\r\n\r\n`);
      expect(res.status, JSON.stringify(header)).toBe(400);
      expectEnvelope(res.body, 'bad_request', 'invalid_header');
    }
  });

  it('answers malformed request lines and framing with the envelope', async () => {
    const cases: [string, string][] = [
      ['G@T / HTTP/1.1\r\nHost: x\r\n\r\n', 'invalid_method'],
      ['GET / HTTP/9.9\r\nHost: x\r\n\r\n', 'invalid_request_line'],
      ['NOT-HTTP\r\n\r\n', ''],
      [
        'POST /v1/containers HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n',
        'invalid_framing',
      ],
      ['POST /v1/containers HTTP/1.1\r\nHost: x\r\nContent-Length: abc\r\n\r\n', 'invalid_framing'],
      [
        'POST /v1/containers HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n{}\r\n0\r\n\r\n',
        'invalid_framing',
      ],
    ];
    for (const [request, reason] of cases) {
      const res = await rawExchange(h.url, request);
      expect(res.status, JSON.stringify(request)).toBe(400);
      expectEnvelope(res.body, 'bad_request', reason || undefined);
    }
  });

  it('answers an Expect header it cannot meet with the envelope (Node would send an empty 417)', async () => {
    const res = await rawExchange(h.url, 'GET /healthz HTTP/1.1\r\nHost: x\r\nExpect: 200-ok\r\n\r\n');
    expect(res.status).toBe(400);
    expectEnvelope(res.body, 'bad_request', 'expectation_failed');
  });

  it('keeps serving well-formed requests on other connections', async () => {
    const res = await rawExchange(h.url, 'GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n');
    expect(res.status).toBe(200);
    expect(JSON.parse(res.body)).toEqual({ ok: true });
  });
});

describe('wrong methods', () => {
  it('answers 405 method_not_allowed with Allow when the path exists under other methods', async () => {
    const cases: [string, string, string][] = [
      ['PUT', '/v1/evaluators', 'GET, HEAD, POST'],
      ['DELETE', '/v1/evaluators', 'GET, HEAD, POST'],
      ['POST', '/v1/evaluators/x', 'GET, HEAD, PATCH, DELETE'],
      ['PUT', '/v1/evaluation/runs/run_1/cancel', 'POST'],
      ['PUT', '/v1/chat/completions', 'GET, HEAD, POST'],
      ['PATCH', '/healthz/', 'GET, HEAD'],
      ['POST', '/v1/evaluation/runs/run_1?x=1', 'GET, HEAD, PATCH'],
    ];
    for (const [method, path, allow] of cases) {
      const res = await h.call(method, path, { key: null });
      expect(res.status, `${method} ${path}`).toBe(405);
      expect(res.headers.get('allow'), `${method} ${path}`).toBe(allow);
      expect(res.body.error.code).toBe('method_not_allowed');
      expect(res.body.error.details.allowed).toEqual(allow.split(', '));
    }
  });

  it('answers 405 whatever the body, and 404 for paths no method serves', async () => {
    const res = await h.call('PUT', '/v1/evaluators', {
      raw: '{"broken": ',
      headers: { 'content-type': 'application/json' },
    });
    expect(res.status).toBe(405);
    expect(res.body.error.code).toBe('method_not_allowed');
    for (const [method, path] of [
      ['GET', '/nope'],
      ['PUT', '/v1/nope'],
      ['GET', '/v1/containers/a/b'],
    ] as const) {
      const missing = await h.call(method, path, { key: null });
      expect(missing.status, `${method} ${path}`).toBe(404);
      expect(missing.body.error.code).toBe('not_found');
      expect(missing.headers.get('allow')).toBeNull();
    }
  });

  it('answers an unknown method on a known path with 405 in the envelope', async () => {
    const res = await rawExchange(
      h.url,
      'PROPFIND /v1/evaluators HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n',
    );
    expect(res.status).toBe(405);
    expect(res.headers.allow).toBe('GET, HEAD, POST');
    expectEnvelope(res.body, 'method_not_allowed');
  });
});

describe('a server that is closing', () => {
  it('answers requests that arrive meanwhile with 503 in the envelope (not Fastify’s own body)', async () => {
    const own = await startHarness();
    const auth = `Authorization: Bearer ${own.admin.key}\r\n`;
    const body = JSON.stringify({ label: 'closing' });
    // A request under way keeps its connection open while the server closes; a second one follows it.
    const connections = ['GET /v1/containers', 'GET /healthz'].map((next) => {
      const socket = net.connect(Number(new URL(own.url).port), '127.0.0.1');
      const chunks: Buffer[] = [];
      socket.on('data', (d) => chunks.push(d));
      socket.on('error', () => {});
      const ended = new Promise((resolve) => socket.on('close', resolve));
      socket.write(
        `POST /v1/containers HTTP/1.1\r\nHost: x\r\n${auth}Content-Type: application/json\r\n` +
          `Content-Length: ${body.length}\r\n\r\n${body.slice(0, 5)}`,
      );
      return {
        socket,
        finish: async () => {
          socket.write(`${body.slice(5)}${next} HTTP/1.1\r\nHost: x\r\n${auth}\r\n`);
          await Promise.race([ended, new Promise((resolve) => setTimeout(resolve, 5000))]);
          const text = Buffer.concat(chunks).toString();
          return { first: text, second: text.slice(text.indexOf('HTTP/1.1', 1)) };
        },
      };
    });
    try {
      await new Promise((resolve) => setTimeout(resolve, 200));
      const closing = own.app.close();
      await new Promise((resolve) => setTimeout(resolve, 100));
      const [api, health] = await Promise.all(connections.map((c) => c.finish()));
      await closing;
      for (const { first, second } of [api!, health!]) {
        expect(first.slice(0, 12)).toMatch(/^HTTP\/1\.1 (201|409)/);
        expect(second.startsWith('HTTP/1.1 503')).toBe(true);
        expect(second.toLowerCase()).toContain('connection: close');
      }
      const bodyOf = (text: string) => text.slice(text.indexOf('\r\n\r\n') + 4);
      const envelope = expectEnvelope(bodyOf(api!.second), 'upstream_unavailable');
      expect(envelope.error.details).toEqual({ reason: 'shutting_down' });
      expect(JSON.parse(bodyOf(health!.second))).toEqual({ ok: false });
    } finally {
      for (const c of connections) c.socket.destroy();
      await own.close().catch(() => {});
    }
  });
});
