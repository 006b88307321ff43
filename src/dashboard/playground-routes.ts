import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import type { Principal } from '../auth/authenticator.js';
import { pageOf } from '../http/schemas.js';
import { openRequest } from '../playground/open.js';
import { OpenQuery, PlaygroundRun, SaveVersion } from '../playground/schemas.js';
import { prepareRun, saveVersion } from '../playground/service.js';
import { streamRun } from '../playground/stream.js';
import { ListPromptsQuery } from '../prompts/schemas.js';
import { listPrompts, listVersions } from '../prompts/service.js';
import { ApiError } from '../shared/errors.js';
import { DASHBOARD_API, type DashboardContext, MEMBER_PERMISSIONS, projectOf, userOf } from './context.js';
import { ProjectParam } from './project-routes.js';

const PromptParam = Type.Object({
  ...ProjectParam.properties,
  prompt: Type.String({ minLength: 1, maxLength: 200 }),
});

/**
 * The Playground page's endpoints: the API's playground for a member of the project (who may do
 * everything in it), acting as the signed-in user: prompt versions are authored by them, the calls are
 * paid by the project (no key is involved) and recorded in its `playground` container.
 */
export const dashboardPlaygroundRoutes: FastifyPluginAsyncTypebox<{ ctx: DashboardContext }> = async (
  app,
  { ctx },
) => {
  const { db } = ctx.deps;
  const hide = true;
  const base = `${DASHBOARD_API}/projects/:project`;
  const memberOf = async (request: Parameters<typeof projectOf>[1]): Promise<Principal> => {
    const project = await projectOf(db, request);
    return { projectId: project.id, keyId: `user:${userOf(request).id}`, permissions: MEMBER_PERMISSIONS };
  };

  app.get(
    `${base}/playground/request`,
    { schema: { hide, params: ProjectParam, querystring: OpenQuery } },
    async (request) => openRequest(db, (await memberOf(request)).projectId, request.query),
  );

  app.post(
    `${base}/playground/runs`,
    { schema: { hide, params: ProjectParam, body: PlaygroundRun } },
    async (request, reply) => {
      const ports = ctx.deps.playground;
      if (!ports) throw new ApiError('not_implemented', 'The playground is not available on this server');
      const run = await prepareRun(ports, await memberOf(request), request.body);
      // A member's call has no key: the project pays, its budget applies.
      run.principal = { projectId: run.principal.projectId, keyId: null };
      await streamRun(ports, run, reply);
    },
  );

  app.post(
    `${base}/playground/versions`,
    { schema: { hide, params: ProjectParam, body: SaveVersion } },
    async (request, reply) =>
      reply.code(201).send(await saveVersion(db, await memberOf(request), request.body)),
  );

  app.get(
    `${base}/prompts`,
    { schema: { hide, params: ProjectParam, querystring: ListPromptsQuery } },
    async (request) =>
      listPrompts({ db }, (await memberOf(request)).projectId, pageOf(request.query), request.query.name),
  );

  app.get(
    `${base}/prompts/:prompt/versions`,
    { schema: { hide, params: PromptParam, querystring: ListPromptsQuery } },
    async (request) =>
      listVersions({ db }, (await memberOf(request)).projectId, request.params.prompt, pageOf(request.query)),
  );
};
