import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { FastifyInstance, FastifyReply } from 'fastify';
import { authRoutes } from './auth-routes.js';
import type { DashboardContext, DashboardPorts } from './context.js';
import { dashboardDatasetItemRoutes } from './dataset-item-routes.js';
import { dashboardGuardRoutes } from './guard-routes.js';
import { inviteLinkRoutes } from './invite-link-routes.js';
import { dashboardMonitorRoutes } from './monitor-routes.js';
import { OidcProviders } from './oidc.js';
import { orgRoutes } from './org-routes.js';
import { dashboardPlaygroundRoutes } from './playground-routes.js';
import { projectRoutes } from './project-routes.js';
import { fromOwnOrigin } from './public-url.js';
import { dashboardReviewManageRoutes } from './review-manage-routes.js';
import { dashboardReviewRoutes } from './review-routes.js';
import { dashboardRunRoutes } from './run-routes.js';
import { dashboardSessionRoutes } from './session-routes.js';
import { cookieOf, loadSession, SESSION_COOKIE } from './sessions.js';
import { sameSecret } from './tokens.js';
import { dashboardTraceRoutes } from './trace-routes.js';

const SAFE_METHODS = new Set(['GET', 'HEAD', 'OPTIONS']);

/**
 * Refusals of the session hook, in the service's error envelope. Their codes are the dashboard's own
 * (`not_signed_in`, `api_key_not_accepted`, `csrf_failed`): the API never answers them.
 */
function deny(reply: FastifyReply, status: 401 | 403, code: string, message: string): FastifyReply {
  if (!reply.request.raw.complete) reply.header('connection', 'close');
  return reply
    .code(status)
    .type('application/json; charset=utf-8')
    .send(JSON.stringify({ error: { code, message } }));
}

/**
 * The dashboard's endpoints under /dashboard/api. Every request is refused when it carries an API key
 * (the dashboard authenticates people, by session cookie, only); every route but sign-in itself needs a
 * live session; every state-changing request must come from the dashboard's own origin and, but for the
 * public ones (signing in with a password, an invitation link), carry the session's CSRF token in
 * `X-CSRF-Token`. None of these routes is part of the API's OpenAPI document.
 */
export const dashboardRoutes: FastifyPluginAsyncTypebox<{
  ports: DashboardPorts;
  /** The server the dashboard is reached through, when it is not the one these routes are added to. */
  listening?: Pick<FastifyInstance, 'addresses'>;
}> = async (app, { ports, listening }) => {
  const deps = ports;
  const { config, db } = deps;
  const ctx: DashboardContext = {
    deps,
    providers: new OidcProviders(config.dashboard.providers),
    cookies: { secure: config.dashboard.publicUrl?.startsWith('https:') ?? false },
    listening: listening ?? app,
  };

  app.decorateRequest('dashboard', null);
  app.addHook('onRequest', async (request, reply) => {
    if (request.headers.authorization !== undefined) {
      return deny(
        reply,
        401,
        'api_key_not_accepted',
        'The dashboard does not accept API keys: sign in, or call the API under /v1 with the key',
      );
    }
    if (request.routeOptions.config?.dashboardPublic) {
      // A public POST (a password, an invitation link) has no session, hence no CSRF token: its origin is checked.
      if (SAFE_METHODS.has(request.method) || fromOwnOrigin(config, request)) return;
      return deny(reply, 403, 'csrf_failed', 'Cross-origin request refused: Origin is not the dashboard');
    }
    const token = cookieOf(request, SESSION_COOKIE);
    const session = token ? await loadSession(db, token) : null;
    if (!session) return deny(reply, 401, 'not_signed_in', 'Sign in to the dashboard first');
    request.dashboard = session;
    if (SAFE_METHODS.has(request.method)) return;
    if (!fromOwnOrigin(config, request)) {
      return deny(reply, 403, 'csrf_failed', 'Cross-origin request refused: Origin is not the dashboard');
    }
    const sent = request.headers['x-csrf-token'];
    if (typeof sent !== 'string' || !sameSecret(sent, session.csrfToken)) {
      return deny(reply, 403, 'csrf_failed', 'Missing or wrong X-CSRF-Token header');
    }
  });
  // Answers about a signed-in user are never stored by the browser or a proxy.
  app.addHook('onSend', async (_request, reply, payload) => {
    reply.header('cache-control', 'no-store');
    return payload;
  });

  await app.register(authRoutes, { ctx });
  await app.register(orgRoutes, { ctx });
  await app.register(inviteLinkRoutes, { ctx });
  await app.register(projectRoutes, { ctx });
  await app.register(dashboardRunRoutes, { ctx });
  await app.register(dashboardMonitorRoutes, { ctx });
  await app.register(dashboardTraceRoutes, { ctx });
  await app.register(dashboardReviewRoutes, { ctx });
  await app.register(dashboardReviewManageRoutes, { ctx });
  await app.register(dashboardSessionRoutes, { ctx });
  await app.register(dashboardDatasetItemRoutes, { ctx });
  await app.register(dashboardPlaygroundRoutes, { ctx });
  await app.register(dashboardGuardRoutes, { ctx });
};
