import type { FastifyRequest } from 'fastify';
import type { Deps } from '../deps.js';
import type { OidcProviders } from './oidc.js';
import { type ProjectAccess, requireProject } from './orgs.js';
import type { UserRow } from './repository.js';
import type { CookiePolicy, DashboardSession } from './sessions.js';

/** What every dashboard route file gets from the dashboard plugin. */
export interface DashboardContext {
  deps: Deps;
  providers: OidcProviders;
  cookies: CookiePolicy;
}

/** Where the dashboard's own endpoints live; nothing under it accepts an API key. */
export const DASHBOARD_API = '/dashboard/api';

/** A request of a dashboard route, whatever its schema. */
export type WithSession = Pick<FastifyRequest, 'dashboard'>;

/** The session of a route behind the session hook (every dashboard route not marked public). */
export function sessionOf(request: WithSession): DashboardSession {
  if (!request.dashboard) throw new Error('dashboard route without a session');
  return request.dashboard;
}

export function userOf(request: WithSession): UserRow {
  return sessionOf(request).user;
}

/** The project a dashboard route's URL names (`:project`), when the session's user may see it (else 404). */
export function projectOf(
  db: Deps['db'],
  request: WithSession & { params: { project: string } },
): Promise<ProjectAccess> {
  return requireProject(db, userOf(request).id, request.params.project);
}

/** The rights a member has inside a project of their organization: all of them, as a `*` key. */
export const MEMBER_PERMISSIONS: readonly string[] = ['*'];
