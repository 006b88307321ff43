import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import { pageOf } from '../http/schemas.js';
import { monitorResults, monitorSamples, sampleEvaluatorId } from '../monitors/results.js';
import {
  CreateMonitor,
  ListMonitorsQuery,
  PatchMonitor,
  ResultsQuery,
  SamplesQuery,
} from '../monitors/schemas.js';
import * as monitors from '../monitors/service.js';
import {
  DASHBOARD_API,
  type DashboardContext,
  MEMBER_PERMISSIONS,
  projectOf,
  type WithSession,
} from './context.js';
import { monitorDetail, withContainerLabels } from './monitor-view.js';
import { ProjectParam } from './project-routes.js';

const MonitorParam = Type.Object({
  ...ProjectParam.properties,
  monitor: Type.String({ minLength: 1, maxLength: 300 }),
});

/**
 * Monitors for the dashboard: the monitor services themselves (list, create, pause and resume, results,
 * samples) inside the project the URL names, once the session's user is found to be a member. Monitors
 * come with their container's label; one monitor also with each evaluator's state and, where it has
 * scored nothing, why (src/dashboard/monitor-view.ts).
 */
export const dashboardMonitorRoutes: FastifyPluginAsyncTypebox<{ ctx: DashboardContext }> = async (
  app,
  { ctx },
) => {
  const monitorCtx = ctx.deps.monitors;
  const { db } = monitorCtx;
  const hide = true;
  const base = `${DASHBOARD_API}/projects/:project/monitors`;
  const projectId = async (request: WithSession & { params: { project: string } }) =>
    (await projectOf(db, request)).id;
  const monitor = async (request: WithSession & { params: { project: string; monitor: string } }) =>
    monitors.requireMonitor(db, await projectId(request), request.params.monitor);

  app.get(
    base,
    { schema: { hide, params: ProjectParam, querystring: ListMonitorsQuery } },
    async (request) => {
      const list = await monitors.listMonitors(
        db,
        await projectId(request),
        request.query.container,
        pageOf(request.query),
      );
      return { ...list, data: await withContainerLabels(db, list.data) };
    },
  );

  app.post(base, { schema: { hide, params: ProjectParam, body: CreateMonitor } }, async (request, reply) => {
    const principal = { projectId: await projectId(request), permissions: MEMBER_PERMISSIONS };
    return reply.code(201).send(await monitors.createMonitor(monitorCtx, principal, request.body));
  });

  app.get(`${base}/:monitor`, { schema: { hide, params: MonitorParam } }, async (request) => {
    const row = await monitor(request);
    const sandbox = monitorCtx.runs.catalog.sandbox;
    return monitorDetail(
      db,
      await monitors.toMonitor(db, row),
      row.run_id,
      sandbox,
      monitorCtx.runs.scorerKinds,
    );
  });

  app.patch(
    `${base}/:monitor`,
    { schema: { hide, params: MonitorParam, body: PatchMonitor } },
    async (request) => {
      const principal = { projectId: await projectId(request), permissions: MEMBER_PERMISSIONS };
      return monitors.patchMonitor(monitorCtx, principal, request.params.monitor, request.body);
    },
  );

  app.get(
    `${base}/:monitor/results`,
    { schema: { hide, params: MonitorParam, querystring: ResultsQuery } },
    async (request) => {
      const { since, until, bucket } = request.query;
      return monitorResults(db, await monitor(request), { since, until }, bucket ?? 'hour');
    },
  );

  app.get(
    `${base}/:monitor/samples`,
    { schema: { hide, params: MonitorParam, querystring: SamplesQuery } },
    async (request) => {
      const m = await monitor(request);
      const { failed, evaluator, since, until } = request.query;
      const evaluatorId = evaluator === undefined ? undefined : await sampleEvaluatorId(db, m, evaluator);
      return monitorSamples(db, m, { failed, evaluatorId, since, until }, pageOf(request.query));
    },
  );
};
