import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import { principalOf } from '../auth/guard.js';
import { pageOf, responses } from '../http/schemas.js';
import { checkSampleAccess } from './access.js';
import { compareAsAsked } from './compare.js';
import { streamRunEvents } from './events.js';
import { listSamples } from './samples.js';
import {
  CompareQuery,
  CreateRun,
  ListRunsQuery,
  ListSamplesQuery,
  PatchRun,
  Run,
  RunComparison,
  RunIdParam,
  RunList,
  SampleList,
} from './schemas.js';
import * as service from './service.js';

const tags = ['evaluation runs'];

const IdempotencyHeaders = Type.Object({
  'idempotency-key': Type.Optional(
    Type.String({ minLength: 1, maxLength: 200, description: 'Same key and body → same run' }),
  ),
});

type RunsApp = Parameters<FastifyPluginAsyncTypebox<{ ports: service.RunContext }>>[0];

/** What a run found and how it goes: its per-sample results, its comparison with a baseline, its events. */
function resultRoutes(app: RunsApp, ctx: service.RunContext): void {
  app.get(
    '/v1/evaluation/runs/:run_id/samples',
    {
      config: { permission: 'evaluation:read' },
      schema: {
        tags,
        summary: 'Per-sample results: one row per launch, evaluator and position',
        params: RunIdParam,
        querystring: ListSamplesQuery,
        response: responses({ 200: SampleList }, 404, 422),
      },
    },
    async (req) => {
      const principal = principalOf(req);
      const run = await service.requireRun(ctx.db, principal.projectId, req.params.run_id);
      checkSampleAccess(ctx, run.plan, principal.permissions);
      return listSamples(ctx.db, run, req.query, pageOf(req.query));
    },
  );

  app.get(
    '/v1/evaluation/runs/:run_id/compare',
    {
      config: { permission: 'evaluation:read' },
      schema: {
        tags,
        summary: 'Compare a run with a baseline run: paired score differences per evaluator and launch',
        params: RunIdParam,
        querystring: CompareQuery,
        response: responses({ 200: RunComparison }, 404, 422),
      },
    },
    async (req) => {
      const principal = principalOf(req);
      // The comparison shows both runs' rows (inputs, outputs, reasonings), as their samples do.
      const authorize = (run: { plan: string }) => checkSampleAccess(ctx, run.plan, principal.permissions);
      return compareAsAsked(ctx.db, principal.projectId, req.params.run_id, req.query, authorize);
    },
  );

  app.get(
    '/v1/evaluation/runs/:run_id/events',
    {
      config: { permission: 'evaluation:read' },
      schema: {
        tags,
        summary: 'Server-sent events: status changes and progress, ending with the terminal status',
        params: RunIdParam,
        response: {
          ...responses({}, 404, 422),
          200: {
            description: 'Server-sent events',
            content: { 'text/event-stream': { schema: Type.String() } },
          },
        },
      },
    },
    async (req, reply) => {
      const run = await service.requireRun(ctx.db, principalOf(req).projectId, req.params.run_id);
      await streamRunEvents(ctx, { id: run.id, projectId: run.project_id }, req, reply);
    },
  );
}

export const runRoutes: FastifyPluginAsyncTypebox<{ ports: service.RunContext }> = async (app, { ports }) => {
  const ctx = ports;
  app.get(
    '/v1/evaluation/runs',
    {
      config: { permission: 'evaluation:read' },
      schema: {
        tags,
        summary: 'List evaluation runs, newest first',
        querystring: ListRunsQuery,
        response: responses({ 200: RunList }, 422, 501),
      },
    },
    async (req) => service.listRuns(ctx, principalOf(req).projectId, req.query, pageOf(req.query)),
  );

  app.post(
    '/v1/evaluation/runs',
    {
      config: { permission: 'evaluation:write' },
      schema: {
        tags,
        summary: 'Launch an evaluation run',
        headers: IdempotencyHeaders,
        body: CreateRun,
        response: responses({ 201: Run }, 404, 409, 413, 415, 422, 501),
      },
    },
    async (req, reply) => {
      const run = await service.createRun(
        ctx,
        principalOf(req),
        req.body,
        req.headers['idempotency-key'] ?? null,
      );
      return reply.code(201).send(run);
    },
  );

  app.get(
    '/v1/evaluation/runs/:run_id',
    {
      config: { permission: 'evaluation:read' },
      schema: {
        tags,
        summary: 'Get an evaluation run',
        params: RunIdParam,
        response: responses({ 200: Run }, 404, 409, 422, 501),
      },
    },
    async (req) =>
      service.withQueue(
        ctx,
        service.toRun(
          await service.requireRun(ctx.db, principalOf(req).projectId, req.params.run_id),
          ctx.sourceKinds,
        ),
      ),
  );

  app.patch(
    '/v1/evaluation/runs/:run_id',
    {
      config: { permission: 'evaluation:write' },
      schema: {
        tags,
        summary: 'Rename an evaluation run (its `name`; null removes it), whatever its status',
        params: RunIdParam,
        body: PatchRun,
        response: responses({ 200: Run }, 404, 415, 422),
      },
    },
    async (req) => service.patchRun(ctx, principalOf(req).projectId, req.params.run_id, req.body),
  );

  app.post(
    '/v1/evaluation/runs/:run_id/cancel',
    {
      config: { permission: 'evaluation:write' },
      schema: {
        tags,
        summary: 'Cancel a queued or running run; partial results are kept',
        params: RunIdParam,
        response: responses({ 200: Run }, 404, 409, 422),
      },
    },
    async (req) => service.cancelRun(ctx, principalOf(req).projectId, req.params.run_id),
  );

  resultRoutes(app, ctx);
};
