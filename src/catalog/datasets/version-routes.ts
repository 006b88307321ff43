import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import { principalOf } from '../../auth/guard.js';
import { pageOf, responses } from '../../http/schemas.js';
import { exportVersion } from './export.js';
import { addItems, type EditContext, patchItem, removeItem } from './item-edits.js';
import { DatasetRefParam } from './schemas.js';
import { requireDataset } from './service.js';
import {
  DatasetDiff,
  DatasetVersionList,
  DiffQuery,
  ExportQuery,
  ItemDeleted,
  ItemParams,
  ItemsChanged,
  ListVersionsQuery,
  NewItem,
  NewItems,
  PatchItem,
} from './version-schemas.js';
import { diffVersions, listVersions, requireVersion } from './versions-service.js';

const tags = ['datasets'];

const ExportResponses: Record<number, unknown> = {
  ...responses({}, 404, 422),
  200: {
    description: 'The version’s items, streamed',
    content: {
      'application/jsonl': { schema: Type.String({ description: 'One JSON object a line' }) },
      'text/csv': { schema: Type.String({ description: 'RFC 4180 CSV with a header row' }) },
    },
  },
};

/** Items added, edited and removed: each change a new version. */
const datasetItemEditRoutes: FastifyPluginAsyncTypebox<{ ctx: EditContext }> = async (app, { ctx }) => {
  const editor = (req: Parameters<typeof principalOf>[0]) => {
    const p = principalOf(req);
    return { projectId: p.projectId, keyId: p.keyId, permissions: p.permissions };
  };

  app.post(
    '/v1/datasets/:dataset/items',
    {
      config: { permission: 'data:write' },
      schema: {
        tags,
        summary: 'Add an item (given, or made from a task log, span, session or review): a new version',
        params: DatasetRefParam,
        body: NewItem,
        response: responses({ 201: ItemsChanged }, 403, 404, 409, 415, 422),
      },
    },
    async (req, reply) =>
      reply.code(201).send(await addItems(ctx, editor(req), req.params.dataset, [req.body], () => ['body'])),
  );

  app.post(
    '/v1/datasets/:dataset/items/batch',
    {
      config: { permission: 'data:write' },
      schema: {
        tags,
        summary: 'Add up to 1000 items at once: one new version',
        params: DatasetRefParam,
        body: NewItems,
        response: responses({ 201: ItemsChanged }, 403, 404, 409, 415, 422),
      },
    },
    async (req, reply) =>
      reply
        .code(201)
        .send(
          await addItems(ctx, editor(req), req.params.dataset, req.body.items, (i) => ['body', 'items', i]),
        ),
  );

  app.patch(
    '/v1/datasets/:dataset/items/:item_id',
    {
      config: { permission: 'data:write' },
      schema: {
        tags,
        summary: 'Edit an item: a new version (earlier versions keep the item as it was)',
        params: ItemParams,
        body: PatchItem,
        response: responses({ 200: ItemsChanged }, 404, 409, 415, 422),
      },
    },
    async (req) => patchItem(ctx, editor(req), req.params.dataset, req.params.item_id, req.body),
  );

  app.delete(
    '/v1/datasets/:dataset/items/:item_id',
    {
      config: { permission: 'data:write' },
      schema: {
        tags,
        summary: 'Remove an item: a new version (earlier versions keep it)',
        params: ItemParams,
        response: responses({ 200: ItemDeleted }, 404, 409, 422),
      },
    },
    async (req) => removeItem(ctx, editor(req), req.params.dataset, req.params.item_id),
  );
};

/** Versions, diffs and exports. */
const datasetVersionReadRoutes: FastifyPluginAsyncTypebox<{ ctx: EditContext }> = async (app, { ctx }) => {
  const { db } = ctx;

  app.get(
    '/v1/datasets/:dataset/versions',
    {
      config: { permission: 'data:read' },
      schema: {
        tags,
        summary: 'The versions of a dataset, newest first',
        params: DatasetRefParam,
        querystring: ListVersionsQuery,
        response: responses({ 200: DatasetVersionList }, 404, 422),
      },
    },
    async (req) => listVersions(db, principalOf(req).projectId, req.params.dataset, pageOf(req.query)),
  );

  app.get(
    '/v1/datasets/:dataset/diff',
    {
      config: { permission: 'data:read' },
      schema: {
        tags,
        summary: 'What changed between two versions (to: default the latest)',
        params: DatasetRefParam,
        querystring: DiffQuery,
        response: responses({ 200: DatasetDiff }, 404, 422),
      },
    },
    async (req) => diffVersions(db, principalOf(req).projectId, req.params.dataset, req.query),
  );

  app.get(
    '/v1/datasets/:dataset/export',
    {
      config: { permission: 'data:read' },
      schema: {
        tags,
        summary: 'A version (default the latest) as JSON lines or CSV, streamed',
        params: DatasetRefParam,
        querystring: ExportQuery,
        response: ExportResponses,
      },
    },
    async (req, reply) => {
      const dataset = await requireDataset(db, principalOf(req).projectId, req.params.dataset);
      const version = requireVersion(dataset, req.query.version, ['query', 'version']);
      const format = req.query.format ?? 'jsonl';
      const name = `${dataset.label}-v${version}${req.query.split ? `-${req.query.split}` : ''}.${format}`;
      return reply
        .type(format === 'csv' ? 'text/csv; charset=utf-8' : 'application/jsonl')
        .header('content-disposition', `attachment; filename="${name}"`)
        .header('x-dataset-version', String(version))
        .send(exportVersion(db, dataset.id, version, { split: req.query.split ?? null, format }));
    },
  );
};

/** Items added, edited and removed (each change a new version), versions, diffs and exports. */
export const datasetVersionRoutes: FastifyPluginAsyncTypebox<{ ctx: EditContext }> = async (app, { ctx }) => {
  await app.register(datasetItemEditRoutes, { ctx });
  await app.register(datasetVersionReadRoutes, { ctx });
};
