import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { principalOf } from '../../auth/guard.js';
import { responses } from '../../http/schemas.js';
import {
  Model,
  ModelDeleted,
  ModelIdParam,
  ModelList,
  ModelRefParam,
  PatchModel,
  RegisterModel,
} from './schemas.js';
import type { RegistryContext } from './service.js';
import * as service from './service.js';

const tags = ['models'];

export const modelRoutes: FastifyPluginAsyncTypebox<{ ports: RegistryContext }> = async (app, { ports }) => {
  // Its upstream check knows the server's own ports, so that a model cannot be pointed at the gateway itself.
  const ctx = ports;

  app.get(
    '/v1/models',
    {
      config: { permission: 'models:read' },
      schema: {
        tags,
        summary:
          'List the models usable by this project (frontier models of enabled providers, then registered)',
        response: responses({ 200: ModelList }),
      },
    },
    async (req) => service.listModels(ctx, principalOf(req).projectId),
  );

  app.post(
    '/v1/models',
    {
      config: { permission: 'models:write' },
      schema: {
        tags,
        summary: 'Register a customer-specific model',
        body: RegisterModel,
        response: responses({ 201: Model }, 409, 413, 415, 422),
      },
    },
    async (req, reply) =>
      reply.code(201).send(await service.registerModel(ctx, principalOf(req).projectId, req.body)),
  );

  app.get(
    '/v1/models/:model',
    {
      config: { permission: 'models:read' },
      schema: {
        tags,
        summary: 'Get a registered model by id or label, or a frontier model by slug',
        params: ModelRefParam,
        response: responses({ 200: Model }, 404, 422),
      },
    },
    async (req) => service.getModel(ctx, principalOf(req).projectId, req.params.model),
  );

  app.patch(
    '/v1/models/:model',
    {
      config: { permission: 'models:write' },
      schema: {
        tags,
        summary: 'Update a registered model by id or label; null clears a nullable field',
        params: ModelRefParam,
        body: PatchModel,
        response: responses({ 200: Model }, 404, 409, 413, 415, 422),
      },
    },
    async (req) => service.patchModel(ctx, principalOf(req).projectId, req.params.model, req.body),
  );

  app.delete(
    '/v1/models/:id',
    {
      config: { permission: 'models:write' },
      schema: {
        tags,
        summary: 'Delete a registered model by id',
        params: ModelIdParam,
        response: responses({ 200: ModelDeleted }, 404, 422),
      },
    },
    async (req) => {
      const { id } = await service.deleteModel(ctx, principalOf(req).projectId, req.params.id);
      return { object: 'model' as const, id, deleted: true as const };
    },
  );
};
