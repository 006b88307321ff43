import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import {
  CreateGuardPolicy,
  ListGuardsQuery,
  UpdateGuardPolicy,
  VerdictSummaryQuery,
} from '../guards/schemas.js';
import * as guards from '../guards/service.js';
import { verdictSummary } from '../guards/summary.js';
import { pageOf } from '../http/schemas.js';
import { DASHBOARD_API, type DashboardContext, projectOf, type WithSession } from './context.js';
import { ProjectParam } from './project-routes.js';

const GuardParam = Type.Object({
  ...ProjectParam.properties,
  guard: Type.String({ minLength: 1, maxLength: 200 }),
});

/**
 * Guards for the dashboard: the policy services themselves (list, create, change, delete) and the
 * verdicts' summary, inside the project the URL names once the session's user is found to be a member.
 */
export const dashboardGuardRoutes: FastifyPluginAsyncTypebox<{ ctx: DashboardContext }> = async (
  app,
  { ctx },
) => {
  const { db } = ctx.deps;
  // Without the gateway's port a change reaches it when its policy cache expires (seconds).
  const ports = ctx.deps.guards ?? { db };
  const hide = true;
  const base = `${DASHBOARD_API}/projects/:project/guards`;
  const projectId = async (request: WithSession & { params: { project: string } }) =>
    (await projectOf(db, request)).id;

  app.get(base, { schema: { hide, params: ProjectParam, querystring: ListGuardsQuery } }, async (request) =>
    guards.listPolicies(ports, await projectId(request), pageOf(request.query)),
  );

  app.post(
    base,
    { schema: { hide, params: ProjectParam, body: CreateGuardPolicy } },
    async (request, reply) =>
      reply.code(201).send(await guards.createPolicy(ports, await projectId(request), request.body)),
  );

  app.get(
    `${base}/verdicts/summary`,
    { schema: { hide, params: ProjectParam, querystring: VerdictSummaryQuery } },
    async (request) => verdictSummary(db, await projectId(request), request.query),
  );

  app.get(`${base}/:guard`, { schema: { hide, params: GuardParam } }, async (request) =>
    guards.toPolicy(await guards.requirePolicy(db, await projectId(request), request.params.guard)),
  );

  app.patch(
    `${base}/:guard`,
    { schema: { hide, params: GuardParam, body: UpdateGuardPolicy } },
    async (request) =>
      guards.updatePolicy(ports, await projectId(request), request.params.guard, request.body),
  );

  app.delete(`${base}/:guard`, { schema: { hide, params: GuardParam } }, async (request) =>
    guards.deletePolicy(ports, await projectId(request), request.params.guard),
  );
};
