import http from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import type { ClientOptions } from '../../src/client/index.js';
import { Evalgate } from '../../src/client/index.js';
import type { Harness } from '../helpers/harness.js';

/** A client of the harness, reading nothing from this process's environment or the user's config file. */
export function clientOf(h: Harness, options: ClientOptions = {}): Evalgate {
  return new Evalgate({ baseURL: h.url, apiKey: h.admin.key, env: {}, ...options });
}

/** A small node:http server on 127.0.0.1; `url` without a trailing slash. */
export interface LocalServer {
  url: string;
  port: number;
  requests: number;
  close(): Promise<void>;
}

export async function localServer(
  handler: (req: http.IncomingMessage, res: http.ServerResponse, index: number) => void,
): Promise<LocalServer> {
  const sockets = new Set<Socket>();
  const state = { requests: 0 };
  const server = http.createServer((req, res) => {
    state.requests += 1;
    handler(req, res, state.requests - 1);
  });
  server.on('connection', (s) => {
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    port,
    get requests() {
      return state.requests;
    },
    async close() {
      for (const s of sockets) s.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

async function readBody(req: http.IncomingMessage): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const c of req) chunks.push(c as Buffer);
  return Buffer.concat(chunks);
}

/**
 * A reverse proxy in front of `target` that forwards every request, except that for requests matching
 * `drop` it forwards them, waits for the upstream's answer, and then destroys the client's connection
 * without a byte of that answer: the request took effect, but its response was lost.
 */
export async function droppingProxy(
  target: string,
  drop: (req: http.IncomingMessage, index: number) => boolean,
): Promise<
  LocalServer & {
    dropped: number;
    forwarded: { method: string; url: string; headers: http.IncomingHttpHeaders }[];
  }
> {
  const forwarded: { method: string; url: string; headers: http.IncomingHttpHeaders }[] = [];
  let dropped = 0;
  const server = await localServer(async (req, res, index) => {
    const body = await readBody(req);
    forwarded.push({ method: req.method ?? '', url: req.url ?? '', headers: req.headers });
    const headers: Record<string, string> = {};
    for (const [k, v] of Object.entries(req.headers)) {
      if (typeof v === 'string' && !['host', 'connection', 'content-length'].includes(k)) headers[k] = v;
    }
    const upstream = await fetch(target + (req.url ?? '/'), {
      method: req.method,
      headers,
      body: body.length ? body : undefined,
    });
    const text = await upstream.text();
    if (drop(req, index)) {
      dropped += 1;
      req.socket.destroy();
      return;
    }
    const out: Record<string, string> = {};
    upstream.headers.forEach((v, k) => {
      if (!['content-length', 'content-encoding', 'transfer-encoding', 'connection'].includes(k)) out[k] = v;
    });
    res.writeHead(upstream.status, out);
    res.end(text);
  });
  return {
    url: server.url,
    port: server.port,
    forwarded,
    get requests() {
      return server.requests;
    },
    get dropped() {
      return dropped;
    },
    close: () => server.close(),
  };
}
