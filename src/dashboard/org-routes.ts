import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import { DASHBOARD_API, type DashboardContext, userOf } from './context.js';
import * as orgs from './orgs.js';

const Name = Type.String({ minLength: 1, maxLength: 100, pattern: '^\\S(.*\\S)?$' });
const OrgParam = Type.Object({ org: Type.String({ minLength: 1, maxLength: 200 }) });
const Role = Type.Enum(['owner', 'member', 'reviewer']);

/** Organizations, members, invitations, and projects created in an organization. */
export const orgRoutes: FastifyPluginAsyncTypebox<{ ctx: DashboardContext }> = async (app, { ctx }) => {
  const { db } = ctx.deps;
  const hide = true;

  app.get(`${DASHBOARD_API}/orgs`, { schema: { hide } }, async (request) => ({
    data: await orgs.listOrganizations(db, userOf(request).id),
    invitations: await orgs.invitationsFor(db, userOf(request)),
  }));

  app.post(
    `${DASHBOARD_API}/orgs`,
    { schema: { hide, body: Type.Object({ name: Name }, { additionalProperties: false }) } },
    async (request, reply) =>
      reply.code(201).send(await orgs.createOrganization(db, userOf(request).id, request.body.name)),
  );

  app.get(`${DASHBOARD_API}/orgs/:org`, { schema: { hide, params: OrgParam } }, async (request) =>
    orgs.organizationDetail(db, userOf(request).id, request.params.org),
  );

  app.post(
    `${DASHBOARD_API}/orgs/:org/projects`,
    {
      schema: {
        hide,
        params: OrgParam,
        body: Type.Object({ name: Name }, { additionalProperties: false }),
      },
    },
    async (request, reply) =>
      reply
        .code(201)
        .send(await orgs.createProjectIn(db, userOf(request).id, request.params.org, request.body.name)),
  );

  app.post(
    `${DASHBOARD_API}/orgs/:org/invitations`,
    {
      schema: {
        hide,
        params: OrgParam,
        body: Type.Object(
          { email: Type.String({ format: 'email', maxLength: 320 }), role: Role },
          { additionalProperties: false },
        ),
      },
    },
    async (request, reply) =>
      reply.code(201).send(await orgs.inviteMember(db, userOf(request).id, request.params.org, request.body)),
  );

  app.delete(
    `${DASHBOARD_API}/orgs/:org/invitations/:invitation`,
    {
      schema: {
        hide,
        params: Type.Object({ ...OrgParam.properties, invitation: Type.String({ maxLength: 200 }) }),
      },
    },
    async (request, reply) => {
      await orgs.revokeInvitation(db, userOf(request).id, request.params.org, request.params.invitation);
      return reply.code(204).send();
    },
  );

  app.delete(
    `${DASHBOARD_API}/orgs/:org/members/:user`,
    {
      schema: {
        hide,
        params: Type.Object({ ...OrgParam.properties, user: Type.String({ maxLength: 200 }) }),
      },
    },
    async (request, reply) => {
      await orgs.removeMember(db, userOf(request).id, request.params.org, request.params.user);
      return reply.code(204).send();
    },
  );

  app.post(
    `${DASHBOARD_API}/invitations/:invitation/accept`,
    { schema: { hide, params: Type.Object({ invitation: Type.String({ maxLength: 200 }) }) } },
    async (request) => orgs.acceptInvitation(db, userOf(request), request.params.invitation),
  );
};
