import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { principalOf } from '../auth/guard.js';
import { pageOf, responses } from '../http/schemas.js';
import { checkSampleAccess } from '../runs/access.js';
import { monitorResults, monitorSamples, sampleEvaluatorId } from './results.js';
import {
  CreateMonitor,
  ListMonitorsQuery,
  Monitor,
  MonitorDeleted,
  MonitorList,
  MonitorRefParam,
  MonitorResults,
  MonitorSampleList,
  PatchMonitor,
  ResultsQuery,
  SamplesQuery,
} from './schemas.js';
import * as service from './service.js';

const tags = ['monitors'];

export const monitorRoutes: FastifyPluginAsyncTypebox<{ ports: service.MonitorContext }> = async (
  app,
  { ports },
) => {
  const ctx = ports;
  const { db } = ctx;

  app.post(
    '/v1/monitors',
    {
      config: { permission: 'evaluation:write' },
      schema: {
        tags,
        summary: "Create a monitor: score a sampled share of a container's calls as they are recorded",
        body: CreateMonitor,
        response: responses({ 201: Monitor }, 404, 413, 415, 422, 501),
      },
    },
    async (req, reply) => reply.code(201).send(await service.createMonitor(ctx, principalOf(req), req.body)),
  );

  app.get(
    '/v1/monitors',
    {
      config: { permission: 'evaluation:read' },
      schema: {
        tags,
        summary: 'List monitors, newest first, optionally of one container',
        querystring: ListMonitorsQuery,
        response: responses({ 200: MonitorList }, 404, 422),
      },
    },
    async (req) =>
      service.listMonitors(db, principalOf(req).projectId, req.query.container, pageOf(req.query)),
  );

  app.get(
    '/v1/monitors/:monitor',
    {
      config: { permission: 'evaluation:read' },
      schema: {
        tags,
        summary: 'Get a monitor by id or name, with its selected count, spend and lag',
        params: MonitorRefParam,
        response: responses({ 200: Monitor }, 404, 422),
      },
    },
    async (req) =>
      service.toMonitor(db, await service.requireMonitor(db, principalOf(req).projectId, req.params.monitor)),
  );

  app.patch(
    '/v1/monitors/:monitor',
    {
      config: { permission: 'evaluation:write' },
      schema: {
        tags,
        summary: 'Update a monitor (name, sampling rate, filter, enabled, alert); enabled=false pauses it',
        params: MonitorRefParam,
        body: PatchMonitor,
        response: responses({ 200: Monitor }, 404, 413, 415, 422),
      },
    },
    async (req) => service.patchMonitor(ctx, principalOf(req), req.params.monitor, req.body),
  );

  app.delete(
    '/v1/monitors/:monitor',
    {
      config: { permission: 'evaluation:write' },
      schema: {
        tags,
        summary: 'Delete a monitor by id or name; its run ends cancelled',
        params: MonitorRefParam,
        response: responses({ 200: MonitorDeleted }, 404, 422),
      },
    },
    async (req) => {
      const { id } = await service.deleteMonitor(ctx, principalOf(req).projectId, req.params.monitor);
      return { object: 'monitor' as const, id, deleted: true as const };
    },
  );

  app.get(
    '/v1/monitors/:monitor/results',
    {
      config: { permission: 'evaluation:read' },
      schema: {
        tags,
        summary: 'Per-evaluator totals and time buckets of the calls recorded in a window',
        params: MonitorRefParam,
        querystring: ResultsQuery,
        response: responses({ 200: MonitorResults }, 404, 422),
      },
    },
    async (req) => {
      const m = await service.requireMonitor(db, principalOf(req).projectId, req.params.monitor);
      const { since, until, bucket } = req.query;
      return monitorResults(db, m, { since, until }, bucket ?? 'hour');
    },
  );

  app.get(
    '/v1/monitors/:monitor/samples',
    {
      config: { permission: 'evaluation:read' },
      schema: {
        tags,
        summary: "A monitor's scored calls, newest first: task log id, input, output, score, reasoning",
        params: MonitorRefParam,
        querystring: SamplesQuery,
        response: responses({ 200: MonitorSampleList }, 404, 422),
      },
    },
    async (req) => {
      const principal = principalOf(req);
      const m = await service.requireMonitor(db, principal.projectId, req.params.monitor);
      const run = await db.selectFrom('runs').select('plan').where('id', '=', m.run_id).executeTakeFirst();
      // The samples show the calls' inputs and outputs: the reader needs the rights to read them.
      checkSampleAccess(ctx.runs, run?.plan ?? 'null', principal.permissions);
      const { failed, evaluator, since, until } = req.query;
      const evaluatorId = evaluator === undefined ? undefined : await sampleEvaluatorId(db, m, evaluator);
      return monitorSamples(db, m, { failed, evaluatorId, since, until }, pageOf(req.query));
    },
  );
};
