import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { Kysely } from 'kysely';
import type { Authenticator } from '../auth/authenticator.js';
import type { ItemOrigins } from '../catalog/datasets/origins.js';
import type { UploadContext } from '../catalog/json-lines.js';
import type { Config } from '../config.js';
import type { Database } from '../db/schema.js';
import type { EvaluatorContext } from '../evaluators/service.js';
import type { GuardPorts } from '../guards/service.js';
import type { ModelContext } from '../llm/models/resolve.js';
import type { MonitorContext } from '../monitors/service.js';
import type { PlaygroundPorts } from '../playground/service.js';
import type { RunContext } from '../runs/service.js';
import type { BudgetAdmin } from '../shared/budget.js';
import type { OidcProviders } from './oidc.js';
import { type ProjectAccess, requireProject, reviewerOnly } from './orgs.js';
import type { UserRow } from './repository.js';
import type { CookiePolicy, DashboardSession } from './sessions.js';

/** What the dashboard needs of the rest of the server: the features' own contexts, and its settings. */
export interface DashboardPorts {
  db: Kysely<Database>;
  config: Config;
  pepper: string;
  auth: Pick<Authenticator, 'forget'>;
  /** Budgets of the project and its keys (shown and set on the settings page). */
  budgets: BudgetAdmin;
  models: ModelContext;
  runs: RunContext;
  uploads: UploadContext;
  evaluators: EvaluatorContext;
  monitors: MonitorContext;
  /** What dataset items are made from ("Add to dataset"); absent: items are given as they are. */
  origins?: ItemOrigins;
  /** The playground's runs (absent: its page cannot run anything). */
  playground?: PlaygroundPorts;
  /** Guard policies, with the gateway's cache to drop on a change (absent: it expires on its own). */
  guards?: GuardPorts;
}

/** What every dashboard route file gets from the dashboard plugin. */
export interface DashboardContext {
  deps: DashboardPorts;
  providers: OidcProviders;
  cookies: CookiePolicy;
  /** The server the dashboard is reached through (its listening address makes the public URL's default). */
  listening: Pick<FastifyInstance, 'addresses'>;
}

export { DASHBOARD_API } from './api-prefix.js';

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

/**
 * The project a dashboard route's URL names (`:project`), when the session's user may see it (else 404).
 * A member with the `reviewer` role is refused (403) unless the route is one of reviewing's (`review`).
 */
export async function projectOf(
  db: Kysely<Database>,
  request: WithSession & { params: { project: string } },
  allow: { review?: boolean } = {},
): Promise<ProjectAccess> {
  const project = await requireProject(db, userOf(request).id, request.params.project);
  if (project.role === 'reviewer' && !allow.review) throw reviewerOnly();
  return project;
}

/** The rights a member has inside a project of their organization: all of them, as a `*` key. */
export const MEMBER_PERMISSIONS: readonly string[] = ['*'];
