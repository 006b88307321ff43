import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { principalOf } from '../auth/guard.js';
import { pageOf, responses } from '../http/schemas.js';
import {
  CreateEvaluator,
  Evaluator,
  EvaluatorDeleted,
  EvaluatorIdParam,
  EvaluatorList,
  EvaluatorRefParam,
  ListEvaluatorsQuery,
  PatchEvaluator,
} from './schemas.js';
import type { EvaluatorContext } from './service.js';
import * as service from './service.js';

const tags = ['evaluators'];

export const evaluatorRoutes: FastifyPluginAsyncTypebox<{ ports: EvaluatorContext }> = async (
  app,
  { ports },
) => {
  const ctx = ports;

  app.get(
    '/v1/evaluators',
    {
      config: { permission: 'evaluators:read' },
      schema: {
        tags,
        summary: 'List evaluators, newest first, optionally of one container',
        querystring: ListEvaluatorsQuery,
        response: responses({ 200: EvaluatorList }, 422),
      },
    },
    async (req) =>
      service.listEvaluators(
        ctx,
        principalOf(req).projectId,
        req.query.container,
        pageOf(req.query),
        req.query.include_project_wide === true,
      ),
  );

  app.post(
    '/v1/evaluators',
    {
      config: { permission: 'evaluators:write' },
      schema: {
        tags,
        summary: 'Create a judge or code evaluator',
        body: CreateEvaluator,
        response: responses({ 201: Evaluator }, 404, 409, 413, 415, 422, 501),
      },
    },
    async (req, reply) =>
      reply.code(201).send(await service.createEvaluator(ctx, principalOf(req).projectId, req.body)),
  );

  app.get(
    '/v1/evaluators/:evaluator',
    {
      config: { permission: 'evaluators:read' },
      schema: {
        tags,
        summary: 'Get an evaluator by id or name',
        params: EvaluatorRefParam,
        response: responses({ 200: Evaluator }, 404, 422),
      },
    },
    async (req) =>
      service.toEvaluator(
        await service.requireEvaluator(ctx.db, principalOf(req).projectId, req.params.evaluator),
      ),
  );

  app.patch(
    '/v1/evaluators/:evaluator',
    {
      config: { permission: 'evaluators:write' },
      schema: {
        tags,
        summary: 'Update an evaluator by id or name; null clears a nullable field',
        params: EvaluatorRefParam,
        body: PatchEvaluator,
        response: responses({ 200: Evaluator }, 404, 409, 413, 415, 422, 501),
      },
    },
    async (req) => service.patchEvaluator(ctx, principalOf(req).projectId, req.params.evaluator, req.body),
  );

  app.delete(
    '/v1/evaluators/:evaluator_id',
    {
      config: { permission: 'evaluators:write' },
      schema: {
        tags,
        summary: 'Delete an evaluator by id',
        params: EvaluatorIdParam,
        response: responses({ 200: EvaluatorDeleted }, 404, 422),
      },
    },
    async (req) => {
      const { id } = await service.deleteEvaluator(ctx, principalOf(req).projectId, req.params.evaluator_id);
      return { object: 'evaluator' as const, id, deleted: true as const };
    },
  );
};
