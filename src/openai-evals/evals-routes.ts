import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { FastifyRequest } from 'fastify';
import { Type } from 'typebox';
import { principalOf } from '../auth/guard.js';
import { responses } from '../http/schemas.js';
import { installOpenAiValidation } from './errors.js';
import { listOutputItems, retrieveOutputItem } from './eval-runs-items.js';
import {
  cancelEvalRun,
  createEvalRun,
  deleteEvalRun,
  type EvalRunPorts,
  listEvalRuns,
  requireEvalRun,
  requireEvalRunRow,
} from './eval-runs-service.js';
import type { EvalRunObject } from './eval-runs-view.js';
import { createEval, deleteEval, listEvals, requireEvalRow, toEval, updateEval } from './evals-service.js';

export interface EvalsPorts extends EvalRunPorts {
  /** Where users reach the dashboard (EVALGATE_PUBLIC_URL), else the request's own origin. */
  publicUrl: string | null;
}

const tags = ['openai-evals'];
const Free = Type.Object({}, { additionalProperties: true });
const Id = Type.String({ minLength: 1, maxLength: 300 });
const EvalParams = Type.Object({ eval_id: Id });
const RunParams = Type.Object({ eval_id: Id, run_id: Id });
const ItemParams = Type.Object({ eval_id: Id, run_id: Id, output_item_id: Id });
const Cursor = {
  after: Type.Optional(Type.String({ maxLength: 300 })),
  limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 100 })),
  order: Type.Optional(Type.Enum(['asc', 'desc'])),
};
const List = Type.Object({
  object: Type.Literal('list'),
  data: Type.Array(Free),
  first_id: Type.Union([Type.String(), Type.Null()]),
  last_id: Type.Union([Type.String(), Type.Null()]),
  has_more: Type.Boolean(),
});
const body = (req: FastifyRequest): unknown => req.body ?? {};
/** As on `POST /v1/evaluation/runs`: the same key with the same body returns the same run. */
const IdempotencyHeaders = Type.Object({
  'idempotency-key': Type.Optional(
    Type.String({ minLength: 1, maxLength: 200, description: 'Same key and body → same run' }),
  ),
});

const read = { config: { permission: 'evaluation:read' as const } };
const write = { config: { permission: 'evaluation:write' as const } };

type EvalsApp = Parameters<FastifyPluginAsyncTypebox<{ ports: EvalsPorts }>>[0];

/** The evals themselves: create, list, get, update, delete. */
function evalResourceRoutes(app: EvalsApp, db: EvalsPorts['runs']['db']): void {
  app.post(
    '/v1/evals',
    {
      ...write,
      attachValidation: true,
      schema: {
        tags,
        summary: 'Create an eval',
        body: Free,
        response: responses({ 200: Free }, 400, 404, 422),
      },
    },
    async (req) => createEval(db, principalOf(req).projectId, body(req)),
  );
  app.get(
    '/v1/evals',
    {
      ...read,
      schema: {
        tags,
        summary: 'List evals',
        querystring: Type.Object({
          ...Cursor,
          order_by: Type.Optional(Type.Enum(['created_at', 'updated_at'])),
        }),
        response: responses({ 200: List }, 400, 404, 422),
      },
    },
    async (req) => listEvals(db, principalOf(req).projectId, req.query),
  );
  app.get(
    '/v1/evals/:eval_id',
    {
      ...read,
      schema: {
        tags,
        summary: 'Get an eval',
        params: EvalParams,
        response: responses({ 200: Free }, 400, 404, 422),
      },
    },
    async (req) => toEval(await requireEvalRow(db, principalOf(req).projectId, req.params.eval_id)),
  );
  app.post(
    '/v1/evals/:eval_id',
    {
      ...write,
      attachValidation: true,
      schema: {
        tags,
        summary: 'Update an eval (name, metadata)',
        params: EvalParams,
        body: Free,
        response: responses({ 200: Free }, 400, 404, 422),
      },
    },
    async (req) => updateEval(db, principalOf(req).projectId, req.params.eval_id, body(req)),
  );
  app.delete(
    '/v1/evals/:eval_id',
    {
      ...write,
      schema: {
        tags,
        summary: 'Delete an eval',
        params: EvalParams,
        response: responses({ 200: Free }, 400, 404, 422),
      },
    },
    async (req) => deleteEval(db, principalOf(req).projectId, req.params.eval_id),
  );
}

/**
 * OpenAI's evals API (`client.evals.*`): evals, their runs (each an Evalgate run) and the runs' output
 * items, in the SDKs' shapes. Bodies are checked by the service, which names every problem (400).
 */
export const evalRoutes: FastifyPluginAsyncTypebox<{ ports: EvalsPorts }> = async (app, { ports }) => {
  installOpenAiValidation(app);
  const { db } = ports.runs;
  const origin = (req: FastifyRequest) => ports.publicUrl ?? `${req.protocol}://${req.host}`;
  const withUrl = (req: FastifyRequest, run: EvalRunObject) => ({
    ...run,
    report_url: `${origin(req)}${run.report_url}`,
  });

  evalResourceRoutes(app, db);

  app.post(
    '/v1/evals/:eval_id/runs',
    {
      ...write,
      attachValidation: true,
      schema: {
        tags,
        summary: 'Create an eval run (an Evalgate run)',
        params: EvalParams,
        headers: IdempotencyHeaders,
        body: Free,
        response: responses({ 200: Free }, 400, 404, 409, 422, 503),
      },
    },
    async (req) => {
      const key = req.headers['idempotency-key'] ?? null;
      const run = await createEvalRun(ports, principalOf(req), req.params.eval_id, body(req), key);
      return withUrl(req, run);
    },
  );
  app.get(
    '/v1/evals/:eval_id/runs',
    {
      ...read,
      schema: {
        tags,
        summary: "List an eval's runs",
        params: EvalParams,
        querystring: Type.Object({
          ...Cursor,
          status: Type.Optional(Type.Enum(['queued', 'in_progress', 'completed', 'canceled', 'failed'])),
        }),
        response: responses({ 200: List }, 400, 404, 422),
      },
    },
    async (req) => {
      const page = await listEvalRuns(db, principalOf(req).projectId, req.params.eval_id, req.query);
      return { ...page, data: page.data.map((r) => withUrl(req, r)) };
    },
  );
  app.get(
    '/v1/evals/:eval_id/runs/:run_id',
    {
      ...read,
      schema: {
        tags,
        summary: 'Get an eval run',
        params: RunParams,
        response: responses({ 200: Free }, 400, 404, 422),
      },
    },
    async (req) =>
      withUrl(
        req,
        await requireEvalRun(db, principalOf(req).projectId, req.params.eval_id, req.params.run_id),
      ),
  );
  app.post(
    '/v1/evals/:eval_id/runs/:run_id',
    {
      ...write,
      attachValidation: true,
      schema: {
        tags,
        summary: 'Cancel an eval run',
        params: RunParams,
        response: responses({ 200: Free }, 400, 404, 422),
      },
    },
    async (req) =>
      withUrl(
        req,
        await cancelEvalRun(ports, principalOf(req).projectId, req.params.eval_id, req.params.run_id),
      ),
  );
  app.delete(
    '/v1/evals/:eval_id/runs/:run_id',
    {
      ...write,
      schema: {
        tags,
        summary: 'Delete an eval run',
        params: RunParams,
        response: responses({ 200: Free }, 400, 404, 422),
      },
    },
    async (req) => deleteEvalRun(ports, principalOf(req).projectId, req.params.eval_id, req.params.run_id),
  );

  app.get(
    '/v1/evals/:eval_id/runs/:run_id/output_items',
    {
      ...read,
      schema: {
        tags,
        summary: "List an eval run's output items",
        params: RunParams,
        querystring: Type.Object({ ...Cursor, status: Type.Optional(Type.Enum(['pass', 'fail'])) }),
        response: responses({ 200: List }, 400, 404, 422),
      },
    },
    async (req) => {
      const { eval_id, run_id } = req.params;
      const principal = principalOf(req);
      const link = await requireEvalRunRow(db, principal.projectId, eval_id, run_id);
      return listOutputItems(ports.runs, link, req.query, principal.permissions);
    },
  );
  app.get(
    '/v1/evals/:eval_id/runs/:run_id/output_items/:output_item_id',
    {
      ...read,
      schema: {
        tags,
        summary: 'Get an output item',
        params: ItemParams,
        response: responses({ 200: Free }, 400, 404, 422),
      },
    },
    async (req) => {
      const { eval_id, run_id, output_item_id } = req.params;
      const principal = principalOf(req);
      const link = await requireEvalRunRow(db, principal.projectId, eval_id, run_id);
      return retrieveOutputItem(ports.runs, link, output_item_id, principal.permissions);
    },
  );
};
