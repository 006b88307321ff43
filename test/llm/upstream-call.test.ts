// Database-independent: the upstream HTTP call against a loopback server, no store.
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { Pool } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CallCanceller } from '../../src/llm/cancel.js';
import { dispatchCall } from '../../src/llm/upstream-call.js';

// A loopback upstream: /whole answers at once; /drip sends a piece every 20 ms until the client goes away.
let server: http.Server;
let pool: Pool;
let dripClosedEarly: Promise<boolean>;
let onDripClosed: (early: boolean) => void = () => {};

beforeAll(async () => {
  server = http.createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      if (req.url === '/whole') {
        res.writeHead(201, { 'x-upstream': 'yes' });
        res.end(`got ${req.method}`);
        return;
      }
      res.writeHead(200, { 'content-type': 'text/plain' });
      const timer = setInterval(() => res.write('piece;'), 20);
      res.once('close', () => {
        clearInterval(timer);
        onDripClosed(!res.writableFinished);
      });
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  pool = new Pool(`http://127.0.0.1:${(server.address() as AddressInfo).port}`, { connections: 4 });
});
afterAll(async () => {
  await pool.destroy();
  await new Promise((r) => server.close(r));
});

const send = (path: string, signal?: CallCanceller) =>
  dispatchCall(pool, path, { headers: { 'content-type': 'text/plain' }, body: 'hi', signal });

describe('upstream calls through the dispatcher', () => {
  it('gives status, headers and the whole body', async () => {
    const response = await send('/whole');
    expect(response.statusCode).toBe(201);
    expect(response.headers['x-upstream']).toBe('yes');
    expect(await response.body.text()).toBe('got POST');
    expect(response.body.destroyed).toBe(true);
  });

  it('hands what arrived before the consumer came, then the rest, then the end', async () => {
    const response = await send('/whole');
    await new Promise((r) => setTimeout(r, 30));
    const seen: string[] = [];
    await new Promise<void>((resolve, reject) =>
      response.body.consume({ data: (b) => seen.push(b.toString()), end: resolve, error: reject }),
    );
    expect(seen.join('')).toBe('got POST');
    expect(() => response.body.consume({ data() {}, end() {}, error() {} })).toThrow(/read once/);
  });

  it('aborts the upstream request when the body is abandoned, and delivers nothing after', async () => {
    dripClosedEarly = new Promise((r) => {
      onDripClosed = r;
    });
    const response = await send('/drip');
    const pieces: string[] = [];
    let ended = false;
    response.body.consume({
      data: (b) => {
        pieces.push(b.toString());
        if (pieces.length === 2) response.body.destroy();
      },
      end: () => {
        ended = true;
      },
      error: () => {
        ended = true;
      },
    });
    expect(await dripClosedEarly).toBe(true);
    await new Promise((r) => setTimeout(r, 60));
    expect(pieces).toHaveLength(2);
    expect(ended).toBe(false);
    expect(response.body.destroyed).toBe(true);
  });

  it('aborts a body in flight when the caller cancels, as an error', async () => {
    dripClosedEarly = new Promise((r) => {
      onDripClosed = r;
    });
    const cancel = new CallCanceller();
    const response = await send('/drip', cancel);
    const failed = new Promise<Error>((resolve) =>
      response.body.consume({ data: () => cancel.abort(), end: () => {}, error: resolve }),
    );
    expect((await failed).name).toBe('AbortError');
    expect(await dripClosedEarly).toBe(true);
  });

  it('rejects a call cancelled before it started', async () => {
    const cancel = new CallCanceller();
    cancel.abort();
    await expect(send('/whole', cancel)).rejects.toMatchObject({ name: 'AbortError' });
  });

  it('rejects when the upstream cannot be reached', async () => {
    const closed = new Pool('http://127.0.0.1:9', { connections: 1 });
    await expect(dispatchCall(closed, '/', { headers: {}, body: '' })).rejects.toMatchObject({
      code: 'ECONNREFUSED',
    });
    await closed.destroy();
  });
});
