import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import { pageOf } from '../http/schemas.js';
import { ListSessionsQuery, SessionTurnsQuery } from '../sessions/schemas.js';
import { getSession, listSessions } from '../sessions/service.js';
import { DASHBOARD_API, type DashboardContext, projectOf, type WithSession } from './context.js';
import { ProjectParam } from './project-routes.js';

const SessionParam = Type.Object({
  ...ProjectParam.properties,
  session: Type.String({ minLength: 1, maxLength: 200 }),
});

/**
 * Sessions for the dashboard: the read API's list (with its filters) and a session's transcript with
 * its turns, tool calls, totals and scores, for a member of the project (anyone else gets 404).
 */
export const dashboardSessionRoutes: FastifyPluginAsyncTypebox<{ ctx: DashboardContext }> = async (
  app,
  { ctx },
) => {
  const { db } = ctx.deps;
  const hide = true;
  const base = `${DASHBOARD_API}/projects/:project`;
  const projectId = async (request: WithSession & { params: { project: string } }) =>
    (await projectOf(db, request)).id;

  app.get(
    `${base}/sessions`,
    { schema: { hide, params: ProjectParam, querystring: ListSessionsQuery } },
    async (request) => listSessions({ db }, await projectId(request), request.query, pageOf(request.query)),
  );

  app.get(
    `${base}/sessions/:session`,
    { schema: { hide, params: SessionParam, querystring: SessionTurnsQuery } },
    async (request) =>
      getSession(
        { db, limits: ctx.deps.config.sessionLimits },
        await projectId(request),
        request.params.session,
        request.query,
      ),
  );
};
