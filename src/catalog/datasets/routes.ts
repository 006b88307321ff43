import multipart from '@fastify/multipart';
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import { principalOf } from '../../auth/guard.js';
import { pageOf, responses } from '../../http/schemas.js';
import { installCsvParser, installNdjsonParser } from '../../http/uploads.js';
import {
  CreateDataset,
  Dataset,
  DatasetDeleted,
  DatasetIdParam,
  DatasetItemList,
  DatasetList,
  DatasetRefParam,
  ListDatasetsQuery,
  ListItemsQuery,
  PatchDataset,
  UploadDatasetQuery,
} from './schemas.js';
import * as service from './service.js';
import { createDatasetFromRequest, datasetPreValidation, installUnsupportedParser } from './uploads.js';
import { datasetVersionRoutes } from './version-routes.js';
import { listItems } from './versions-service.js';

export { createDatasetFromRequest, datasetPreValidation } from './uploads.js';

const tags = ['datasets'];

const JsonLines = Type.Unknown({
  description:
    'One JSON object per line (label and description as query parameters); gzip allowed (at most EVALGATE_UPLOAD_LIMIT bytes once decompressed, and 100 times the compressed size)',
});

const Csv = Type.Unknown({
  description:
    'CSV whose header row names the fields (label and description as query parameters); gzip allowed as for JSON lines',
});

const Form = Type.Unknown({
  description:
    'A form with a `file` part (.csv, .jsonl or .ndjson) and optional `label` and `description` fields before it',
});

export const datasetRoutes: FastifyPluginAsyncTypebox<{ ports: service.DatasetContext }> = async (
  app,
  { ports },
) => {
  const ctx = ports;
  const { db } = ctx;
  installNdjsonParser(app);
  installCsvParser(app);
  installUnsupportedParser(app);
  await app.register(multipart, {
    limits: { fileSize: ctx.uploadLimit, files: 1, fields: 10, fieldSize: 10_000 },
  });

  app.post(
    '/v1/datasets',
    {
      config: { permission: 'data:write' },
      preValidation: datasetPreValidation(),
      schema: {
        tags,
        summary:
          'Create a dataset from a JSON body, or a streamed upload of JSON lines or CSV (raw or as a form file)',
        querystring: UploadDatasetQuery,
        body: {
          content: {
            'application/json': { schema: CreateDataset },
            'application/x-ndjson': { schema: JsonLines },
            'text/csv': { schema: Csv },
            'multipart/form-data': { schema: Form },
          },
        },
        response: responses({ 201: Dataset }, 409, 413, 415, 422),
      },
    },
    async (req, reply) =>
      reply.code(201).send(await createDatasetFromRequest(ctx, principalOf(req).projectId, req)),
  );

  app.get(
    '/v1/datasets',
    {
      config: { permission: 'data:read' },
      schema: {
        tags,
        summary: 'List datasets, newest first',
        querystring: ListDatasetsQuery,
        response: responses({ 200: DatasetList }, 422),
      },
    },
    async (req) => service.listDatasets(db, principalOf(req).projectId, pageOf(req.query)),
  );

  app.get(
    '/v1/datasets/:dataset',
    {
      config: { permission: 'data:read' },
      schema: {
        tags,
        summary: 'Get a dataset by id or label',
        params: DatasetRefParam,
        response: responses({ 200: Dataset }, 404, 422),
      },
    },
    async (req) =>
      service.toDataset(await service.requireDataset(db, principalOf(req).projectId, req.params.dataset)),
  );

  app.patch(
    '/v1/datasets/:dataset',
    {
      config: { permission: 'data:write' },
      schema: {
        tags,
        summary: 'Update the label, description or metadata of a dataset (its items change through /items)',
        params: DatasetRefParam,
        body: PatchDataset,
        response: responses({ 200: Dataset }, 404, 409, 413, 415, 422),
      },
    },
    async (req) => service.patchDataset(db, principalOf(req).projectId, req.params.dataset, req.body),
  );

  app.delete(
    '/v1/datasets/:id',
    {
      config: { permission: 'data:write' },
      schema: {
        tags,
        summary: 'Delete a dataset by id (409 while a queued or running run uses it)',
        params: DatasetIdParam,
        response: responses({ 200: DatasetDeleted }, 404, 409, 422),
      },
    },
    async (req) => {
      const { id } = await service.deleteDataset(db, principalOf(req).projectId, req.params.id);
      return { object: 'dataset' as const, id, deleted: true as const };
    },
  );

  app.get(
    '/v1/datasets/:dataset/items',
    {
      config: { permission: 'data:read' },
      schema: {
        tags,
        summary:
          'Items of a version of a dataset (default the latest; ?split= one split) in order; ?range=start:end selects a slice',
        params: DatasetRefParam,
        querystring: ListItemsQuery,
        response: responses({ 200: DatasetItemList }, 404, 422),
      },
    },
    async (req) =>
      listItems(db, principalOf(req).projectId, req.params.dataset, req.query, pageOf(req.query)),
  );

  await app.register(datasetVersionRoutes, { ctx: { db, origins: ctx.origins } });
};
