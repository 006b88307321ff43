import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { FastifyReply } from 'fastify';
import { Type } from 'typebox';
import { ApiError } from '../shared/errors.js';
import { DASHBOARD_API, type DashboardContext, userOf } from './context.js';
import * as links from './invite-links.js';
import { localSignInEnabled } from './local-sign-in.js';
import {
  ATTEMPTS_PER_CLIENT,
  ATTEMPTS_PER_NAME,
  attemptLimiter,
  checkPassword,
  PASSWORD_ISSUER,
  PASSWORD_MAX,
  USERNAME_PATTERN,
  verifyPassword,
} from './passwords.js';
import { publicUrlOf } from './public-url.js';
import * as repo from './repository.js';
import { SESSION_COOKIE, SESSION_PATH, setCookie, startSession } from './sessions.js';

const OrgParam = Type.Object({ org: Type.String({ minLength: 1, maxLength: 200 }) });
const Token = Type.String({ minLength: 1, maxLength: 200 });
const TokenBody = Type.Object({ token: Token }, { additionalProperties: false });
const Username = Type.String({ minLength: 3, maxLength: 40, pattern: USERNAME_PATTERN });
const Password = Type.String({ minLength: 1, maxLength: PASSWORD_MAX * 4 });
const CreateLinkBody = Type.Object(
  {
    role: Type.Enum(['owner', 'member', 'reviewer']),
    expires_in_days: Type.Optional(Type.Integer({ minimum: 1, maximum: links.LINK_TTL_MAX_DAYS })),
    project: Type.Optional(Type.String({ minLength: 1, maxLength: 200 })),
  },
  { additionalProperties: false },
);
const RegisterBody = Type.Object(
  {
    token: Token,
    username: Username,
    password: Password,
    name: Type.Optional(Type.String({ maxLength: 100 })),
  },
  { additionalProperties: false },
);
const SignInBody = Type.Object(
  { username: Type.String({ minLength: 1, maxLength: 40 }), password: Password },
  { additionalProperties: false },
);

function requireAccounts(ctx: DashboardContext): void {
  if (!localSignInEnabled(ctx.deps.config)) {
    throw new ApiError(
      'permission_denied',
      'This server signs in through identity providers: sign in there, then open the link again',
      { reason: 'local_sign_in_disabled' },
    );
  }
}

/**
 * Invitations by link (owners make, list and revoke them; a signed-in user accepts one), and the
 * dashboard's own accounts they create on a server without identity providers: registering with a link,
 * and signing in with a name and password (both limited per client address).
 */
export const inviteLinkRoutes: FastifyPluginAsyncTypebox<{ ctx: DashboardContext }> = async (
  app,
  { ctx },
) => {
  const { db, config } = ctx.deps;
  const hide = true;
  const publicRoute = { dashboardPublic: true };
  // Registrations and sign-ins per client address; sign-ins per name too (a guessed account's password).
  const registrations = attemptLimiter(ATTEMPTS_PER_CLIENT);
  const signIns = attemptLimiter(ATTEMPTS_PER_CLIENT);
  const perName = attemptLimiter(ATTEMPTS_PER_NAME);
  app.addHook('onClose', async () => {
    for (const l of [registrations, signIns, perName]) await l.close();
  });

  const signInAs = async (reply: FastifyReply, userId: string) => {
    const { token } = await startSession(db, userId, config.dashboard.sessionTtlMs);
    setCookie(reply, ctx.cookies, SESSION_COOKIE, token, SESSION_PATH, config.dashboard.sessionTtlMs);
  };

  app.post(
    `${DASHBOARD_API}/orgs/:org/invitation-links`,
    { schema: { hide, params: OrgParam, body: CreateLinkBody } },
    async (request, reply) => {
      const base = publicUrlOf(config, ctx.listening);
      const link = await links.createInvitationLink(
        db,
        userOf(request).id,
        request.params.org,
        request.body,
        base,
      );
      return reply.code(201).send(link);
    },
  );

  app.get(
    `${DASHBOARD_API}/orgs/:org/invitation-links`,
    { schema: { hide, params: OrgParam } },
    async (request) => links.listInvitationLinks(db, userOf(request).id, request.params.org),
  );

  app.delete(
    `${DASHBOARD_API}/orgs/:org/invitation-links/:link`,
    {
      schema: {
        hide,
        params: Type.Object({ ...OrgParam.properties, link: Type.String({ minLength: 1, maxLength: 200 }) }),
      },
    },
    async (request) =>
      links.revokeInvitationLink(db, userOf(request).id, request.params.org, request.params.link),
  );

  app.post(
    `${DASHBOARD_API}/invitation-links/accept`,
    { schema: { hide, body: TokenBody } },
    async (request) => links.acceptInvitationLink(db, userOf(request).id, request.body.token),
  );

  // The token travels in a body, never in a URL of the API (URLs end up in logs).
  app.post(
    `${DASHBOARD_API}/auth/invitation`,
    { config: publicRoute, schema: { hide, body: TokenBody } },
    async (request) => ({
      ...(await links.inspectInvitationLink(db, request.body.token)),
      accounts: localSignInEnabled(config),
    }),
  );

  app.post(
    `${DASHBOARD_API}/auth/invitation/register`,
    { config: publicRoute, schema: { hide, body: RegisterBody } },
    async (request, reply) => {
      requireAccounts(ctx);
      await registrations.take(request.ip);
      const { token, username, password, name } = request.body;
      checkPassword(password, username, ['body', 'password']);
      const made = await links.registerWithInvitationLink(db, token, { username, password, name });
      await signInAs(reply, made.userId);
      request.log.info(
        { user: made.userId, issuer: PASSWORD_ISSUER },
        'dashboard account made by invitation link',
      );
      return reply.code(201).send({ redirect: made.redirect });
    },
  );

  app.post(
    `${DASHBOARD_API}/auth/password`,
    { config: publicRoute, schema: { hide, body: SignInBody } },
    async (request, reply) => {
      requireAccounts(ctx);
      const username = request.body.username.toLowerCase();
      await signIns.take(request.ip);
      await perName.take(username);
      const account = await links.passwordAccount(db, username);
      // An unknown name costs the same hash as a wrong password, and reads the same.
      const ok = await verifyPassword(request.body.password, account?.password_hash ?? null);
      if (!account || !ok) {
        request.log.warn({ reason: 'password_rejected' }, 'dashboard sign-in refused: password_rejected');
        return reply.code(401).send({ error: { code: 'sign_in_failed', message: 'Wrong name or password' } });
      }
      await repo.upsertUser(db, {
        issuer: PASSWORD_ISSUER,
        subject: username,
        email: null,
        emailVerified: false,
        name: account.name,
      });
      await signInAs(reply, account.user_id);
      request.log.info({ user: account.user_id, issuer: PASSWORD_ISSUER }, 'dashboard sign-in');
      return { redirect: '/' };
    },
  );
};
