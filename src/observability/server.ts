import type { ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { nodeHttp } from '../shared/node-http.js';
import type { Metrics } from './metrics.js';

export type MetricsAuthorization = 'ok' | 'unauthorized' | 'forbidden';

export interface MetricsServerOptions {
  host: string;
  /** 0 picks a free port; the bound one is in the returned url. */
  port: number;
  metrics: Metrics;
  /** Decides on the request's Authorization header (an API key with `metrics:read`). */
  authorize: (authorizationHeader: string | undefined) => Promise<MetricsAuthorization>;
}

export interface MetricsServer {
  /** `http://host:port`, with the bound port. */
  url: string;
  close(): Promise<void>;
}

type ErrorCode =
  | 'invalid_api_key'
  | 'permission_denied'
  | 'not_found'
  | 'method_not_allowed'
  | 'internal_error';

function sendError(res: ServerResponse, status: number, code: ErrorCode, message: string): void {
  const body = JSON.stringify({ error: { code, message } });
  res.writeHead(status, {
    'content-type': 'application/json; charset=utf-8',
    'content-length': Buffer.byteLength(body),
    ...(status === 405 ? { allow: 'GET, HEAD' } : {}),
  });
  res.end(body);
}

/**
 * `GET /metrics` for processes without the API server (`evalgate worker --metrics-port`): a bare
 * node:http server, since a worker has no other routes; errors use the API's envelope.
 */
export async function startMetricsServer(options: MetricsServerOptions): Promise<MetricsServer> {
  const server = nodeHttp.createServer((req, res) => {
    void (async () => {
      const path = (req.url ?? '/').split('?')[0];
      if (path !== '/metrics' && path !== '/metrics/') {
        return sendError(res, 404, 'not_found', `No route ${req.method} ${path}`);
      }
      if (req.method !== 'GET' && req.method !== 'HEAD') {
        return sendError(res, 405, 'method_not_allowed', `Method ${req.method} is not allowed on /metrics`);
      }
      const decision = await options.authorize(req.headers.authorization);
      if (decision === 'unauthorized')
        return sendError(res, 401, 'invalid_api_key', 'Missing or invalid API key');
      if (decision === 'forbidden') {
        return sendError(res, 403, 'permission_denied', "This API key lacks the 'metrics:read' permission");
      }
      const { contentType, body } = await options.metrics.render();
      res.writeHead(200, { 'content-type': contentType, 'content-length': Buffer.byteLength(body) });
      res.end(req.method === 'HEAD' ? undefined : body);
    })().catch(() => {
      // The authorizer (database) or a collector failed: answer, never leave the scrape hanging.
      if (res.headersSent) res.destroy();
      else sendError(res, 500, 'internal_error', 'Could not render the metrics');
    });
  });
  // Scrapes are short; idle keep-alive connections must not hold close() up.
  server.keepAliveTimeout = 5_000;

  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port, options.host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const { port } = server.address() as AddressInfo;
  const host = options.host.includes(':') ? `[${options.host}]` : options.host;

  return {
    url: `http://${host}:${port}`,
    close: () =>
      new Promise<void>((resolve, reject) => {
        server.close((err) => (err ? reject(err) : resolve()));
        server.closeIdleConnections();
      }),
  };
}
