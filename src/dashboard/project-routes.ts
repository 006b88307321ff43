import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { type TString, Type } from 'typebox';
import { createKey, findKey, listKeys, revokeKey } from '../auth/key-store.js';
import { CreateContainer, ListContainersQuery } from '../catalog/containers/schemas.js';
import * as containers from '../catalog/containers/service.js';
import { createDatasetFromRequest, datasetPreValidation } from '../catalog/datasets/routes.js';
import {
  CreateDataset,
  ListDatasetsQuery,
  ListItemsQuery,
  UploadDatasetQuery,
} from '../catalog/datasets/schemas.js';
import * as datasets from '../catalog/datasets/service.js';
import { listItems as listDatasetItems } from '../catalog/datasets/versions-service.js';
import { listModels } from '../catalog/models/service.js';
import { CreateEvaluator, ListEvaluatorsQuery, PatchEvaluator } from '../evaluators/schemas.js';
import * as evaluators from '../evaluators/service.js';
import { BudgetSchema } from '../http/budget-schemas.js';
import { Nullable, PageQuery, pageOf } from '../http/schemas.js';
import { installCsvParser, installNdjsonParser } from '../http/uploads.js';
import { DASHBOARD_API, type DashboardContext, projectOf, userOf, type WithSession } from './context.js';
import type { ProjectAccess } from './orgs.js';
import { DashboardLogsQuery, dashboardLogs } from './task-logs.js';

export const ProjectParam = Type.Object({ project: Type.String({ minLength: 1, maxLength: 200 }) });
const param = <K extends string>(name: K) =>
  Type.Object({
    ...ProjectParam.properties,
    [name]: Type.String({ minLength: 1, maxLength: 300 }),
  } as { project: TString } & Record<K, TString>);

const CreateKeyBody = Type.Object(
  {
    name: Type.String({ minLength: 1, maxLength: 200 }),
    permissions: Type.Array(Type.String({ minLength: 1, maxLength: 100 }), { minItems: 1, maxItems: 100 }),
  },
  { additionalProperties: false },
);

type ProjectApp = Parameters<FastifyPluginAsyncTypebox<{ ctx: DashboardContext }>>[0];
type ProjectOf = (request: WithSession & { params: { project: string } }) => Promise<ProjectAccess>;

/** A project's API keys (shown once at creation, listed by prefix, revoked) and its budgets. */
function keyRoutes(app: ProjectApp, ctx: DashboardContext, base: string, project: ProjectOf): void {
  const { deps } = ctx;
  const { db } = deps;
  const hide = true;
  // API keys: shown once at creation, listed by prefix, revoked.
  app.get(
    `${base}/keys`,
    { schema: { hide, params: ProjectParam, querystring: Type.Object(PageQuery) } },
    async (request) => {
      const { id } = await project(request);
      const { data, total } = await listKeys(db, id, pageOf(request.query));
      const states = await deps.budgets.keys(
        id,
        data.map((k) => k.id),
      );
      const withBudgets = data.map((k) => ({ budget: null, spend: null, ...k, ...states.get(k.id) }));
      return { object: 'list', data: withBudgets, total };
    },
  );
  app.post(
    `${base}/keys`,
    { schema: { hide, params: ProjectParam, body: CreateKeyBody } },
    async (request, reply) => {
      const { id } = await project(request);
      const { view, key } = await createKey(db, deps.pepper, {
        projectId: id,
        name: request.body.name,
        permissions: request.body.permissions,
        createdBy: userOf(request).id,
      });
      return reply.code(201).send({ ...view, key });
    },
  );
  app.delete(`${base}/keys/:key`, { schema: { hide, params: param('key') } }, async (request) => {
    const { id } = await project(request);
    const view = await revokeKey(db, request.params.key, id);
    deps.auth.forget(view.id);
    return view;
  });

  // Budgets: the project's, and each key's (`budget: null` removes one).
  const SetBudget = Type.Object({ budget: Nullable(BudgetSchema) }, { additionalProperties: false });
  app.get(`${base}/budget`, { schema: { hide, params: ProjectParam } }, async (request) => {
    const { id } = await project(request);
    return deps.budgets.get(id, 'project', id);
  });
  app.put(`${base}/budget`, { schema: { hide, params: ProjectParam, body: SetBudget } }, async (request) => {
    const { id } = await project(request);
    return deps.budgets.set(id, 'project', id, request.body.budget);
  });
  app.put(
    `${base}/keys/:key/budget`,
    { schema: { hide, params: param('key'), body: SetBudget } },
    async (request) => {
      const { id } = await project(request);
      await findKey(db, request.params.key, id);
      return deps.budgets.set(id, 'key', request.params.key, request.body.budget);
    },
  );
}

/**
 * A project's resources as its organization's members see them: the same services the API calls, with
 * the project taken from the URL once the session's user is found to be a member (otherwise 404).
 */
export const projectRoutes: FastifyPluginAsyncTypebox<{ ctx: DashboardContext }> = async (app, { ctx }) => {
  const { deps } = ctx;
  const { db } = deps;
  const hide = true;
  const base = `${DASHBOARD_API}/projects/:project`;
  const evaluatorCtx = deps.evaluators;
  const uploads = deps.uploads;
  const project: ProjectOf = (request) => projectOf(db, request);
  installNdjsonParser(app);
  installCsvParser(app);

  // A reviewer reads the project itself too (the Review page is inside it), nothing else of it.
  app.get(base, { schema: { hide, params: ProjectParam } }, async (request) =>
    projectOf(db, request, { review: true }),
  );

  keyRoutes(app, ctx, base, project);

  // Containers and their task logs.
  app.get(
    `${base}/containers`,
    { schema: { hide, params: ProjectParam, querystring: ListContainersQuery } },
    async (request) => containers.listContainers(db, (await project(request)).id, pageOf(request.query)),
  );
  app.post(
    `${base}/containers`,
    { schema: { hide, params: ProjectParam, body: CreateContainer } },
    async (request, reply) =>
      reply.code(201).send(await containers.createContainer(db, (await project(request)).id, request.body)),
  );
  app.get(
    `${base}/containers/:container/logs`,
    { schema: { hide, params: param('container'), querystring: DashboardLogsQuery } },
    async (request) =>
      dashboardLogs(db, (await project(request)).id, request.params.container, request.query),
  );

  // Evaluators.
  app.get(
    `${base}/evaluators`,
    { schema: { hide, params: ProjectParam, querystring: ListEvaluatorsQuery } },
    async (request) =>
      evaluators.listEvaluators(
        evaluatorCtx,
        (await project(request)).id,
        request.query.container,
        pageOf(request.query),
      ),
  );
  app.post(
    `${base}/evaluators`,
    { schema: { hide, params: ProjectParam, body: CreateEvaluator } },
    async (request, reply) =>
      reply
        .code(201)
        .send(await evaluators.createEvaluator(evaluatorCtx, (await project(request)).id, request.body)),
  );
  app.get(
    `${base}/evaluators/:evaluator`,
    { schema: { hide, params: param('evaluator') } },
    async (request) =>
      evaluators.toEvaluator(
        await evaluators.requireEvaluator(db, (await project(request)).id, request.params.evaluator),
      ),
  );
  app.patch(
    `${base}/evaluators/:evaluator`,
    { schema: { hide, params: param('evaluator'), body: PatchEvaluator } },
    async (request) =>
      evaluators.patchEvaluator(
        evaluatorCtx,
        (await project(request)).id,
        request.params.evaluator,
        request.body,
      ),
  );

  // Datasets: a JSON body, or JSON lines streamed (the dashboard's upload, with its progress).
  app.get(
    `${base}/datasets`,
    { schema: { hide, params: ProjectParam, querystring: ListDatasetsQuery } },
    async (request) => datasets.listDatasets(db, (await project(request)).id, pageOf(request.query)),
  );
  app.post(
    `${base}/datasets`,
    {
      // JSON, JSON lines or CSV, read as `POST /v1/datasets` reads them.
      preValidation: datasetPreValidation(),
      schema: {
        hide,
        params: ProjectParam,
        querystring: UploadDatasetQuery,
        body: {
          content: {
            'application/json': { schema: CreateDataset },
            'application/x-ndjson': { schema: Type.Unknown() },
            'text/csv': { schema: Type.Unknown() },
          },
        },
      },
    },
    async (request, reply) => {
      const { id } = await project(request);
      return reply.code(201).send(await createDatasetFromRequest(uploads, id, request));
    },
  );
  app.get(`${base}/datasets/:dataset`, { schema: { hide, params: param('dataset') } }, async (request) =>
    datasets.toDataset(
      await datasets.requireDataset(db, (await project(request)).id, request.params.dataset),
    ),
  );
  app.get(
    `${base}/datasets/:dataset/items`,
    { schema: { hide, params: param('dataset'), querystring: ListItemsQuery } },
    async (request) =>
      listDatasetItems(
        db,
        (await project(request)).id,
        request.params.dataset,
        request.query,
        pageOf(request.query),
      ),
  );

  // Models, for the judge model of an evaluator and the generators of a run.
  app.get(`${base}/models`, { schema: { hide, params: ProjectParam } }, async (request) =>
    listModels(deps.models, (await project(request)).id),
  );
};
