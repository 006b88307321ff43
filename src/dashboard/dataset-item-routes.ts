import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import { addItems } from '../catalog/datasets/item-edits.js';
import { ItemsChanged, NewItem } from '../catalog/datasets/version-schemas.js';
import { DASHBOARD_API, type DashboardContext, projectOf, userOf } from './context.js';
import { ProjectParam } from './project-routes.js';

const DatasetParam = Type.Object({
  ...ProjectParam.properties,
  dataset: Type.String({ minLength: 1, maxLength: 200 }),
});

/**
 * "Add to dataset" on the task log, trace, session and review item pages: the API's item creation (a
 * new version) for a member of the project, who reads everything the project holds; the version records
 * the user as its author.
 */
export const dashboardDatasetItemRoutes: FastifyPluginAsyncTypebox<{ ctx: DashboardContext }> = async (
  app,
  { ctx },
) => {
  const { db, origins } = ctx.deps;
  app.post(
    `${DASHBOARD_API}/projects/:project/datasets/:dataset/items`,
    { schema: { hide: true, params: DatasetParam, body: NewItem, response: { 201: ItemsChanged } } },
    async (request, reply) => {
      const project = await projectOf(db, request);
      const editor = { projectId: project.id, keyId: `user:${userOf(request).id}`, permissions: ['*'] };
      const change = await addItems({ db, origins }, editor, request.params.dataset, [request.body], () => [
        'body',
      ]);
      return reply.code(201).send(change);
    },
  );
};
