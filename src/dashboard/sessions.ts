import { parse, serialize } from 'cookie';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { Kysely } from 'kysely';
import type { Database } from '../db/schema.js';
import { nowIso } from '../shared/ids.js';
import * as repo from './repository.js';
import { randomToken, sha256 } from './tokens.js';

/** The session cookie is sent only to the dashboard's endpoints, never to the API or the static files. */
export const SESSION_COOKIE = 'evalgate_session';
export const SESSION_PATH = '/dashboard/api';
/** Binds an OpenID Connect login to the browser that started it (the `state` parameter), 10 minutes. */
export const LOGIN_COOKIE = 'evalgate_login';
export const LOGIN_PATH = '/dashboard/api/auth';
export const LOGIN_TTL_MS = 10 * 60_000;

export interface DashboardSession {
  id: string;
  csrfToken: string;
  expiresAt: number;
  user: repo.UserRow;
}

declare module 'fastify' {
  interface FastifyRequest {
    /** The signed-in dashboard user's session (dashboard routes only). */
    dashboard: DashboardSession | null;
  }
  interface FastifyContextConfig {
    /** A dashboard route that needs no session (sign-in itself). */
    dashboardPublic?: boolean;
  }
}

export function cookieOf(request: FastifyRequest, name: string): string | undefined {
  const header = request.headers.cookie;
  if (!header) return undefined;
  return parse(header)[name];
}

export interface CookiePolicy {
  /** Set when the dashboard is reached over https (`EVALGATE_PUBLIC_URL`). */
  secure: boolean;
}

export function setCookie(
  reply: FastifyReply,
  policy: CookiePolicy,
  name: string,
  value: string,
  path: string,
  maxAgeMs: number,
): void {
  reply.header(
    'set-cookie',
    serialize(name, value, {
      httpOnly: true,
      sameSite: 'lax',
      secure: policy.secure,
      path,
      maxAge: Math.floor(maxAgeMs / 1000),
      expires: new Date(Date.now() + maxAgeMs),
    }),
  );
}

export function clearCookie(reply: FastifyReply, policy: CookiePolicy, name: string, path: string): void {
  reply.header(
    'set-cookie',
    serialize(name, '', {
      httpOnly: true,
      sameSite: 'lax',
      secure: policy.secure,
      path,
      maxAge: 0,
      expires: new Date(0),
    }),
  );
}

/**
 * A new session for a user who just signed in: a fresh token (never one the browser brought along, so a
 * planted cookie cannot become a signed-in session), stored only as its hash, with its CSRF token.
 */
export async function startSession(
  db: Kysely<Database>,
  userId: string,
  ttlMs: number,
): Promise<{ token: string; expiresAt: number }> {
  const token = randomToken();
  const now = Date.now();
  const expiresAt = now + ttlMs;
  await repo.deleteExpired(db, now);
  await repo.insertSession(db, {
    id: sha256(token),
    user_id: userId,
    csrf_token: randomToken(24),
    created_at: nowIso(),
    expires_at: expiresAt,
  });
  return { token, expiresAt };
}

export async function loadSession(db: Kysely<Database>, token: string): Promise<DashboardSession | null> {
  const found = await repo.findSession(db, sha256(token), Date.now());
  if (!found) return null;
  return {
    id: found.session.id,
    csrfToken: found.session.csrf_token,
    expiresAt: found.session.expires_at,
    user: found.user,
  };
}

export async function endSession(db: Kysely<Database>, session: DashboardSession): Promise<void> {
  await repo.deleteSession(db, session.id);
}

/** The signed-in user as the dashboard's `/me` answers it. */
export function meView(session: DashboardSession, provider: string) {
  const { user } = session;
  return {
    user: {
      id: user.id,
      name: user.name,
      email: user.email,
      email_verified: user.email_verified === 1,
      issuer: user.issuer,
      provider,
    },
    csrf_token: session.csrfToken,
    expires_at: new Date(session.expiresAt).toISOString(),
  };
}
