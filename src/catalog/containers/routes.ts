import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { Kysely } from 'kysely';
import { principalOf } from '../../auth/guard.js';
import type { Database } from '../../db/schema.js';
import { pageOf, responses } from '../../http/schemas.js';
import {
  Container,
  ContainerDeleted,
  ContainerIdParam,
  ContainerList,
  ContainerRefParam,
  CreateContainer,
  ListContainersQuery,
  PatchContainer,
} from './schemas.js';
import * as service from './service.js';

const tags = ['containers'];

export const containerRoutes: FastifyPluginAsyncTypebox<{ ports: { db: Kysely<Database> } }> = async (
  app,
  { ports },
) => {
  const { db } = ports;

  app.post(
    '/v1/containers',
    {
      config: { permission: 'containers:write' },
      schema: {
        tags,
        summary: 'Create a container',
        body: CreateContainer,
        response: responses({ 201: Container }, 409, 413, 415, 422),
      },
    },
    async (req, reply) =>
      reply.code(201).send(await service.createContainer(db, principalOf(req).projectId, req.body)),
  );

  app.get(
    '/v1/containers',
    {
      config: { permission: 'containers:read' },
      schema: {
        tags,
        summary: 'List containers',
        querystring: ListContainersQuery,
        response: responses({ 200: ContainerList }, 422),
      },
    },
    async (req) => service.listContainers(db, principalOf(req).projectId, pageOf(req.query)),
  );

  app.get(
    '/v1/containers/:container',
    {
      config: { permission: 'containers:read' },
      schema: {
        tags,
        summary: 'Get a container by id or label',
        params: ContainerRefParam,
        response: responses({ 200: Container }, 404, 422),
      },
    },
    async (req) =>
      service.toContainer(
        await service.requireContainer(db, principalOf(req).projectId, req.params.container),
      ),
  );

  app.patch(
    '/v1/containers/:container',
    {
      config: { permission: 'containers:write' },
      schema: {
        tags,
        summary: 'Update a container by id or label',
        params: ContainerRefParam,
        body: PatchContainer,
        response: responses({ 200: Container }, 404, 409, 413, 415, 422),
      },
    },
    async (req) => service.patchContainer(db, principalOf(req).projectId, req.params.container, req.body),
  );

  app.delete(
    '/v1/containers/:id',
    {
      config: { permission: 'containers:write' },
      schema: {
        tags,
        summary: 'Delete a container by id',
        params: ContainerIdParam,
        response: responses({ 200: ContainerDeleted }, 404, 409, 422),
      },
    },
    async (req) => {
      const { id } = await service.deleteContainer(db, principalOf(req).projectId, req.params.id);
      return { object: 'container' as const, id, deleted: true as const };
    },
  );
};
