import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { Type } from 'typebox';
import { ApiError } from '../shared/errors.js';
import { DASHBOARD_API, type DashboardContext, sessionOf } from './context.js';
import { LOCAL_ISSUER, LOCAL_SUBJECT, localSignInEnabled, redeemLocalSignIn } from './local-sign-in.js';
import { refusalReason } from './oidc.js';
import { claimOwnerlessOrganizations } from './orgs.js';
import { PASSWORD_ISSUER } from './passwords.js';
import { publicUrlOf } from './public-url.js';
import * as repo from './repository.js';
import {
  clearCookie,
  cookieOf,
  endSession,
  LOGIN_COOKIE,
  LOGIN_PATH,
  LOGIN_TTL_MS,
  meView,
  SESSION_COOKIE,
  SESSION_PATH,
  setCookie,
  startSession,
} from './sessions.js';
import { sameSecret, sha256 } from './tokens.js';

const ProviderParam = Type.Object({ provider: Type.String({ minLength: 1, maxLength: 63 }) });

/**
 * Only a path of this site: never another origin (`//host`, `/\\host`, or one hidden behind control
 * characters, which browsers drop from URLs), never the dashboard's API.
 */
export function safeReturnTo(value: string | undefined): string {
  if (value?.[0] !== '/' || value.startsWith(DASHBOARD_API)) return '/';
  for (let i = 0; i < value.length; i++) {
    const code = value.charCodeAt(i);
    if (code < 0x20 || code === 0x7f || code === 0x5c) return '/';
  }
  return value.startsWith('//') ? '/' : value;
}

/** A failed sign-in ends on the sign-in page with a reason (also logged), and no session. */
function refuser(cookies: DashboardContext['cookies']) {
  return (
    request: FastifyRequest,
    reply: FastifyReply,
    reason: string,
    detail: Record<string, unknown> = {},
  ): FastifyReply => {
    request.log.warn({ reason, ...detail }, `dashboard sign-in refused: ${reason}`);
    clearCookie(reply, cookies, LOGIN_COOKIE, LOGIN_PATH);
    return reply.redirect(`/signin?error=${encodeURIComponent(reason)}`, 302);
  };
}

/**
 * Who owns the organizations nobody owns (the `default` one of the first start, those of
 * `projects create --org`): the local operator; with providers, the user whose verified e-mail is
 * `EVALGATE_ADMIN_EMAIL`, or without it the first user to sign in through a provider.
 */
async function claimsOwnerless(
  ctx: DashboardContext,
  identity: repo.Identity,
  userId: string,
): Promise<boolean> {
  if (identity.issuer === LOCAL_ISSUER) return true;
  if (identity.issuer === PASSWORD_ISSUER) return false;
  const admin = ctx.deps.config.dashboard.adminEmail;
  if (admin !== null) return identity.emailVerified && identity.email?.toLowerCase() === admin;
  return repo.isFirstProviderUser(ctx.deps.db, userId, [LOCAL_ISSUER, PASSWORD_ISSUER]);
}

/** A sign-in that succeeded: the user kept, a session started in this browser, then back where it began. */
function signer(ctx: DashboardContext) {
  const { db, config } = ctx.deps;
  return async (
    request: FastifyRequest,
    reply: FastifyReply,
    identity: repo.Identity,
    returnTo: string,
  ): Promise<FastifyReply> => {
    const user = await repo.upsertUser(db, identity);
    if (await claimsOwnerless(ctx, identity, user.id)) await claimOwnerlessOrganizations(db, user.id);
    const { token } = await startSession(db, user.id, config.dashboard.sessionTtlMs);
    setCookie(reply, ctx.cookies, SESSION_COOKIE, token, SESSION_PATH, config.dashboard.sessionTtlMs);
    request.log.info({ user: user.id, issuer: identity.issuer }, 'dashboard sign-in');
    return reply.redirect(returnTo, 302);
  };
}

export const authRoutes: FastifyPluginAsyncTypebox<{ ctx: DashboardContext }> = async (app, { ctx }) => {
  const { deps, providers, cookies } = ctx;
  const { db, config } = deps;
  const publicRoute = { dashboardPublic: true };

  const refuse = refuser(cookies);
  const signIn = signer(ctx);

  app.get(`${DASHBOARD_API}/auth/providers`, { config: publicRoute, schema: { hide: true } }, async () => ({
    providers: providers.list(),
    local: localSignInEnabled(config),
  }));

  app.get(
    `${DASHBOARD_API}/auth/login/:provider`,
    {
      config: publicRoute,
      schema: {
        hide: true,
        params: ProviderParam,
        querystring: Type.Object({ return_to: Type.Optional(Type.String({ maxLength: 1000 })) }),
      },
    },
    async (request, reply) => {
      const provider = providers.find(request.params.provider);
      if (!provider) throw ApiError.notFound('Identity provider', request.params.provider);
      const redirectUri = `${publicUrlOf(config, ctx.listening)}${DASHBOARD_API}/auth/callback/${provider.id}`;
      let started: Awaited<ReturnType<typeof providers.start>>;
      try {
        started = await providers.start(provider, redirectUri);
      } catch (err) {
        return refuse(request, reply, 'provider_unavailable', { provider: provider.id, err });
      }
      await repo.insertLogin(db, {
        state_hash: sha256(started.state),
        provider: provider.id,
        nonce: started.nonce,
        code_verifier: started.codeVerifier,
        return_to: safeReturnTo(request.query.return_to),
        expires_at: Date.now() + LOGIN_TTL_MS,
      });
      setCookie(reply, cookies, LOGIN_COOKIE, started.state, LOGIN_PATH, LOGIN_TTL_MS);
      return reply.redirect(started.url.href, 302);
    },
  );

  app.get(
    `${DASHBOARD_API}/auth/callback/:provider`,
    { config: publicRoute, schema: { hide: true, params: ProviderParam } },
    async (request, reply) => {
      const provider = providers.find(request.params.provider);
      if (!provider) return refuse(request, reply, 'unknown_provider', { provider: request.params.provider });
      const callbackUrl = new URL(request.url, publicUrlOf(config, ctx.listening));
      const state = callbackUrl.searchParams.get('state') ?? '';
      // The state must be the one this browser was given when it left for the provider.
      const bound = cookieOf(request, LOGIN_COOKIE);
      const where = { provider: provider.id };
      if (!state || !bound || !sameSecret(state, bound)) {
        const why = !state
          ? 'no state'
          : !bound
            ? 'no login cookie in this browser'
            : 'not the state of this browser';
        return refuse(request, reply, 'state_mismatch', { ...where, why });
      }
      const login = await repo.takeLogin(db, sha256(state));
      if (!login || login.provider !== provider.id) {
        const why = login ? `a login started at provider ${login.provider}` : 'unknown or already used';
        return refuse(request, reply, 'state_mismatch', { ...where, why });
      }
      if (login.expires_at <= Date.now()) return refuse(request, reply, 'login_expired', where);
      let identity: repo.Identity;
      try {
        identity = await providers.finish(provider, callbackUrl, {
          state,
          nonce: login.nonce,
          codeVerifier: login.code_verifier,
        });
      } catch (err) {
        return refuse(request, reply, refusalReason(err), { ...where, err });
      }
      clearCookie(reply, cookies, LOGIN_COOKIE, LOGIN_PATH);
      return signIn(request, reply, identity, login.return_to);
    },
  );

  app.get(
    `${DASHBOARD_API}/auth/local`,
    {
      config: publicRoute,
      schema: {
        hide: true,
        querystring: Type.Object({ token: Type.String({ minLength: 1, maxLength: 200 }) }),
      },
    },
    async (request, reply) => {
      if (!localSignInEnabled(config)) return refuse(request, reply, 'local_sign_in_disabled');
      if (!(await redeemLocalSignIn(db, request.query.token))) return refuse(request, reply, 'link_invalid');
      const identity = {
        issuer: LOCAL_ISSUER,
        subject: LOCAL_SUBJECT,
        email: null,
        emailVerified: false,
        name: 'Local operator',
      };
      return signIn(request, reply, identity, '/');
    },
  );

  app.post(`${DASHBOARD_API}/auth/logout`, { schema: { hide: true } }, async (request, reply) => {
    await endSession(db, sessionOf(request));
    clearCookie(reply, cookies, SESSION_COOKIE, SESSION_PATH);
    return reply.code(204).send();
  });

  app.get(`${DASHBOARD_API}/me`, { schema: { hide: true } }, async (request) => {
    const session = sessionOf(request);
    const { issuer } = session.user;
    const provider =
      issuer === LOCAL_ISSUER
        ? 'Local sign-in link'
        : issuer === PASSWORD_ISSUER
          ? 'Name and password'
          : (config.dashboard.providers.find((p) => p.issuer === issuer)?.name ?? issuer);
    return meView(session, provider);
  });
};
