import type { IncomingMessage, ServerResponse } from 'node:http';
import type { FastifyInstance } from 'fastify';
import { ApiError } from '../shared/errors.js';
import { errorBody } from './error-handler.js';

type RequestListener = (req: IncomingMessage, res: ServerResponse) => void;

/** The path of a request URL as the router matches it: before the query, percent-decoding undone. */
export function routedPath(url: string): string {
  const query = url.indexOf('?');
  const fragment = url.indexOf('#');
  const end = query === -1 ? fragment : fragment === -1 ? query : Math.min(query, fragment);
  const path = end === -1 ? url : url.slice(0, end);
  if (!path.includes('%')) return path;
  try {
    // Like the router, which decodes a path but for the characters that would change its structure.
    return decodeURI(path);
  } catch {
    return path;
  }
}

/** Whether `url` is `prefix` or under it. */
export function isUnder(prefix: string, url: string): boolean {
  // Every request passes here: one that cannot be under the prefix (it does not start with it, and no
  // percent-encoding could make it) is told apart without making its path.
  if (!url.startsWith(prefix) && !url.includes('%')) return false;
  const path = routedPath(url);
  return path === prefix || path.startsWith(`${prefix}/`);
}

/**
 * Serves the requests under `prefix` (or whose path it accepts, when it is a function of the path) from
 * a second Fastify instance that `build` makes on the first such request, instead of registering those routes on `app` at start: a rarely used group of routes (the
 * dashboard's JSON API) then costs nothing to a process that never serves it. `build` must install the
 * same request handling as `app` (error handler, body parsing, hooks); the instance it returns is never
 * listened on: `app`'s HTTP server hands it the requests under `prefix` (`routing`), and every other
 * request to `app`, as before. `app` must have no route under `prefix`. Closing `app` closes it too.
 * `app.inject()` does not go through the HTTP server, so it does not reach the routes under `prefix`.
 */
export function serveLazily(
  app: FastifyInstance,
  prefix: string | ((path: string) => boolean),
  build: () => Promise<FastifyInstance>,
): void {
  const served =
    typeof prefix === 'string'
      ? (url: string) => isUnder(prefix, url)
      : (url: string) => prefix(routedPath(url));
  const name = typeof prefix === 'string' ? prefix : prefix.name;
  const http = app.server;
  const routeApp = http.listeners('request') as RequestListener[];
  if (routeApp.length !== 1)
    throw new Error(`expected one request listener on the server, found ${routeApp.length}`);
  const appRouting = routeApp[0]!;
  let child: Promise<FastifyInstance> | null = null;
  let closing = false;

  async function ready(): Promise<FastifyInstance> {
    const instance = await build();
    await instance.ready();
    // Made while the server closes: it answers as a closing server does.
    if (closing) await instance.close();
    return instance;
  }

  http.removeListener('request', appRouting);
  http.on('request', (req: IncomingMessage, res: ServerResponse) => {
    if (!served(req.url ?? '/')) return appRouting(req, res);
    child ??= ready();
    child.then(
      (instance) => instance.routing(req, res),
      (err: unknown) => {
        app.log.error({ err }, `the routes of ${name} could not be set up`);
        child = null;
        res.writeHead(500, { 'content-type': 'application/json; charset=utf-8', connection: 'close' });
        res.end(JSON.stringify(errorBody(new ApiError('internal_error', 'Internal error'))));
      },
    );
  });
  app.addHook('preClose', async () => {
    closing = true;
    if (child) await (await child).close();
  });
}
