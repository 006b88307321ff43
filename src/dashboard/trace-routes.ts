import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import { findLog } from '../catalog/logs/repository.js';
import { toTaskLog } from '../catalog/logs/service.js';
import { pageOf } from '../http/schemas.js';
import { scoresOfItem } from '../runs/service.js';
import { ApiError } from '../shared/errors.js';
import { getTrace, listTraces } from '../traces/reads.js';
import { ListTracesQuery } from '../traces/types.js';
import { DASHBOARD_API, type DashboardContext, projectOf, type WithSession } from './context.js';
import { ProjectParam } from './project-routes.js';

const TraceParam = Type.Object({
  ...ProjectParam.properties,
  trace: Type.String({ minLength: 1, maxLength: 200 }),
});
const CallParam = Type.Object({
  ...ProjectParam.properties,
  log: Type.String({ minLength: 1, maxLength: 300 }),
});

/** How many scores a model call's panel lists (newest first). */
const SCORES_SHOWN = 50;

/**
 * Traces for the dashboard: the read API's list and span tree, and for a model-call span its task log
 * (input, output, tool calls, tokens) with the scores runs and monitors gave it.
 */
export const dashboardTraceRoutes: FastifyPluginAsyncTypebox<{ ctx: DashboardContext }> = async (
  app,
  { ctx },
) => {
  const { db } = ctx.deps;
  const hide = true;
  const base = `${DASHBOARD_API}/projects/:project`;
  const projectId = async (request: WithSession & { params: { project: string } }) =>
    (await projectOf(db, request)).id;

  app.get(
    `${base}/traces`,
    { schema: { hide, params: ProjectParam, querystring: ListTracesQuery } },
    async (request) => listTraces(db, await projectId(request), request.query, pageOf(request.query)),
  );

  app.get(`${base}/traces/:trace`, { schema: { hide, params: TraceParam } }, async (request) =>
    getTrace(db, await projectId(request), request.params.trace),
  );

  app.get(`${base}/calls/:log`, { schema: { hide, params: CallParam } }, async (request) => {
    const project = await projectId(request);
    const row = await findLog(db, project, request.params.log);
    if (!row) throw ApiError.notFound('Task log', request.params.log);
    return { log: toTaskLog(row), scores: await scoresOfItem(db, project, row.id, SCORES_SHOWN) };
  });
};
