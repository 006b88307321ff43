import fs from 'node:fs';
import path from 'node:path';
import fastifyStatic from '@fastify/static';
import type { FastifyPluginAsync, FastifyReply } from 'fastify';
import { packagePath } from '../shared/package-root.js';

/** `npm run build` (run by `npm ci`) writes the web app here; the same place from src/ and from dist/. */
export const WEB_ROOT = packagePath('web', 'dist');

/**
 * The web app's own pages, answered with its index.html (the app routes in the browser). Only these:
 * any other path keeps answering 404 in the envelope, and nothing here shadows /v1, /healthz,
 * /openapi.json, /docs or /metrics.
 */
export const CLIENT_ROUTES = ['/', '/signin', '/invite/*', '/orgs/*', '/projects/*'];

/** Everything the page loads comes from this server; it may not be framed. */
const CONTENT_SECURITY_POLICY = [
  "default-src 'self'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self' data:",
  "connect-src 'self'",
  "base-uri 'none'",
  "form-action 'self'",
  "frame-ancestors 'none'",
].join('; ');

function pageHeaders(reply: FastifyReply): FastifyReply {
  return reply
    .header('cache-control', 'no-cache')
    .header('content-security-policy', CONTENT_SECURITY_POLICY)
    .header('x-content-type-options', 'nosniff')
    .header('x-frame-options', 'DENY')
    .header('referrer-policy', 'same-origin');
}

/**
 * Serves the built dashboard: hashed assets under /assets/ (cached for good, brotli or gzip files
 * written by the build when the browser takes them), and index.html for the app's pages.
 */
export const dashboardWeb: FastifyPluginAsync<{ root?: string }> = async (app, options) => {
  const root = options.root ?? WEB_ROOT;
  const index = path.join(root, 'index.html');
  if (!fs.existsSync(index)) {
    for (const url of CLIENT_ROUTES) {
      app.get(url, { schema: { hide: true } }, async (_request, reply) =>
        reply
          .code(503)
          .type('text/plain; charset=utf-8')
          .send('The dashboard is not built: run `npm run build` (npm ci does it), then restart.\n'),
      );
    }
    return;
  }
  await app.register(fastifyStatic, {
    root: path.join(root, 'assets'),
    prefix: '/assets/',
    preCompressed: true,
    immutable: true,
    maxAge: '365d',
    index: false,
    // One route per built file: any other path under /assets/ is a plain 404 (a wildcard route would make
    // the not-found handler answer 405, since the path then "exists" for GET and HEAD).
    wildcard: false,
    schemaHide: true,
  });
  for (const url of CLIENT_ROUTES) {
    app.get(url, { schema: { hide: true } }, async (_request, reply) =>
      pageHeaders(reply).sendFile('index.html', root, { maxAge: 0, cacheControl: false }),
    );
  }
};
