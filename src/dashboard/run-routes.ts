import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import { pageOf } from '../http/schemas.js';
import { compareAsAsked } from '../runs/compare.js';
import { streamRunEvents } from '../runs/events.js';
import { listSamples } from '../runs/samples.js';
import { CompareQuery, CreateRun, ListRunsQuery, ListSamplesQuery, PatchRun } from '../runs/schemas.js';
import * as runs from '../runs/service.js';
import {
  DASHBOARD_API,
  type DashboardContext,
  MEMBER_PERMISSIONS,
  projectOf,
  type WithSession,
} from './context.js';
import { ProjectParam } from './project-routes.js';
import { planSummary } from './run-summary.js';

const RunParam = Type.Object({
  ...ProjectParam.properties,
  run: Type.String({ minLength: 1, maxLength: 200 }),
});

/** Bins of the score distribution over [0, 1]; scores outside it go to the first or last bin. */
const BINS = 10;

/**
 * Evaluation runs for the dashboard: the run services themselves (listing, creation, cancellation,
 * samples, comparison, the event stream) inside the project the URL names, once the session's user is
 * found to be a member of its organization.
 */
export const dashboardRunRoutes: FastifyPluginAsyncTypebox<{ ctx: DashboardContext }> = async (
  app,
  { ctx },
) => {
  const { db } = ctx.deps;
  const runCtx = ctx.deps.runs;
  const hide = true;
  const base = `${DASHBOARD_API}/projects/:project/runs`;
  const projectId = async (request: WithSession & { params: { project: string } }) =>
    (await projectOf(db, request)).id;
  const run = async (request: WithSession & { params: { project: string; run: string } }) =>
    runs.requireRun(db, await projectId(request), request.params.run);

  app.get(base, { schema: { hide, params: ProjectParam, querystring: ListRunsQuery } }, async (request) =>
    runs.listRuns(runCtx, await projectId(request), request.query, pageOf(request.query)),
  );

  app.post(base, { schema: { hide, params: ProjectParam, body: CreateRun } }, async (request, reply) => {
    const principal = { projectId: await projectId(request), permissions: MEMBER_PERMISSIONS };
    return reply.code(201).send(await runs.createRun(runCtx, principal, request.body, null));
  });

  app.get(`${base}/:run`, { schema: { hide, params: RunParam } }, async (request) => {
    const row = await run(request);
    return {
      run: await runs.withQueue(runCtx, runs.toRun(row, runCtx.sourceKinds)),
      ...(await planSummary(db, runCtx.sourceKinds, row)),
    };
  });

  app.patch(`${base}/:run`, { schema: { hide, params: RunParam, body: PatchRun } }, async (request) =>
    runs.patchRun(runCtx, await projectId(request), request.params.run, request.body),
  );

  app.post(`${base}/:run/cancel`, { schema: { hide, params: RunParam } }, async (request) =>
    runs.cancelRun(runCtx, await projectId(request), request.params.run),
  );

  app.get(
    `${base}/:run/samples`,
    { schema: { hide, params: RunParam, querystring: ListSamplesQuery } },
    async (request) => listSamples(db, await run(request), request.query, pageOf(request.query)),
  );

  app.get(
    `${base}/:run/compare`,
    { schema: { hide, params: RunParam, querystring: CompareQuery } },
    async (request) => compareAsAsked(db, await projectId(request), request.params.run, request.query),
  );

  app.get(`${base}/:run/distribution`, { schema: { hide, params: RunParam } }, async (request) => {
    const row = await run(request);
    const series = new Map<string, { launch_index: number; evaluator_id: string; counts: number[] }>();
    for (const c of await runs.scoreCounts(db, row.id)) {
      const key = `${c.launch_index}:${c.evaluator_id}`;
      let entry = series.get(key);
      if (!entry) {
        entry = { launch_index: c.launch_index, evaluator_id: c.evaluator_id, counts: Array(BINS).fill(0) };
        series.set(key, entry);
      }
      const bin = Math.min(BINS - 1, Math.max(0, Math.floor(c.score * BINS)));
      entry.counts[bin] = (entry.counts[bin] ?? 0) + c.n;
    }
    return { bins: BINS, series: [...series.values()] };
  });

  app.get(`${base}/:run/events`, { schema: { hide, params: RunParam } }, async (request, reply) => {
    const row = await run(request);
    await streamRunEvents(runCtx, { id: row.id, projectId: row.project_id }, request, reply);
  });
};
