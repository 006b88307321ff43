import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { Kysely } from 'kysely';
import { Type } from 'typebox';
import type { Database } from '../db/schema.js';
import { BudgetFields, BudgetSchema } from '../http/budget-schemas.js';
import { ListOf, Nullable, PageQuery, pageOf, responses } from '../http/schemas.js';
import type { Budget, BudgetAdmin } from '../shared/budget.js';
import { ApiError } from '../shared/errors.js';
import type { Authenticator } from './authenticator.js';
import { principalOf } from './guard.js';
import {
  type ApiKeyView,
  createKey,
  findKey,
  listKeys,
  renameKey,
  revokeKey,
  validatePermissions,
} from './key-store.js';

const tags = ['api-keys'];

const ApiKey = Type.Object({
  object: Type.Literal('api_key'),
  id: Type.String(),
  project_id: Type.String(),
  name: Type.String(),
  prefix: Type.String({ description: 'First characters of the key, to tell keys apart' }),
  permissions: Type.Array(Type.String()),
  created_by: Nullable(Type.String()),
  created_at: Type.String(),
  last_used_at: Nullable(Type.String()),
  revoked_at: Nullable(Type.String()),
  cache_ttl_seconds: Nullable(
    Type.Integer({ description: "Default response-cache TTL (seconds) of the key's gateway calls" }),
  ),
  ...BudgetFields,
});
const CreatedApiKey = Type.Object({
  ...ApiKey.properties,
  key: Type.String({ description: 'The secret key; shown only in this response' }),
});
const CreateApiKey = Type.Object(
  {
    name: Type.String({ minLength: 1, maxLength: 200 }),
    permissions: Type.Optional(
      Type.Array(Type.String({ minLength: 1, maxLength: 100 }), {
        minItems: 1,
        maxItems: 100,
        description: "<resource>:<action> strings; default: the creating key's own permissions",
      }),
    ),
    cache_ttl_seconds: Type.Optional(
      Nullable(
        Type.Integer({
          minimum: 1,
          maximum: 2_592_000,
          description:
            "Caches the key's gateway calls for this many seconds (as X-Evalgate-Cache: use); null: only " +
            'requests that ask are cached',
        }),
      ),
    ),
    budget: Type.Optional(Nullable(BudgetSchema)),
  },
  { additionalProperties: false },
);
const UpdateApiKey = Type.Object(
  {
    name: Type.Optional(Type.String({ minLength: 1, maxLength: 200 })),
    budget: Type.Optional(Nullable(BudgetSchema)),
  },
  { additionalProperties: false, minProperties: 1 },
);
const KeyParams = Type.Object({ id: Type.String({ minLength: 1, maxLength: 200 }) });

/** Whether `granted` covers `wanted`, where a wildcard in `wanted` needs the same wildcard in `granted`. */
function covers(granted: readonly string[], wanted: string): boolean {
  const [wr, wa] = wanted === '*' ? ['*', '*'] : wanted.split(':');
  return granted.some((g) => {
    const [gr, ga] = g === '*' ? ['*', '*'] : g.split(':');
    return (gr === '*' || gr === wr) && (ga === '*' || ga === wa);
  });
}

/** Refuses (permission_denied) when `granted` does not cover all of `wanted`; `what` opens the message. */
function requireCovered(granted: readonly string[], wanted: readonly string[], what: string): void {
  const beyond = wanted.filter((p) => !covers(granted, p));
  if (beyond.length > 0) {
    throw new ApiError('permission_denied', `${what}: ${beyond.join(', ')}`, { permissions: beyond });
  }
}

/**
 * What the key routes need: the database, the key pepper, the authenticator's cache to forget keys and
 * the keys' budgets.
 */
export interface ApiKeyPorts {
  db: Kysely<Database>;
  pepper: string;
  auth: Pick<Authenticator, 'forget'>;
  budgets: BudgetAdmin;
}

export const apiKeyRoutes: FastifyPluginAsyncTypebox<{ ports: ApiKeyPorts }> = async (app, { ports }) => {
  const { db, pepper, auth, budgets } = ports;

  /** Views with each key's budget and the spend of its current period. */
  async function withBudgets<T extends ApiKeyView>(projectId: string, views: T[]) {
    const states = await budgets.keys(
      projectId,
      views.map((v) => v.id),
    );
    return views.map((v) => ({ ...v, budget: null, spend: null, ...states.get(v.id) }));
  }
  const withBudget = async <T extends ApiKeyView>(view: T) => {
    const [one] = await withBudgets(view.project_id, [view]);
    return one ?? { ...view, budget: null, spend: null };
  };

  app.post(
    '/v1/api-keys',
    {
      config: { permission: 'keys:write' },
      schema: {
        tags,
        summary: "Create an API key in the caller's project; the key is shown once",
        body: CreateApiKey,
        response: responses({ 201: CreatedApiKey }, 413, 415, 422),
      },
    },
    async (req, reply) => {
      const principal = principalOf(req);
      const permissions = req.body.permissions ?? [...principal.permissions];
      validatePermissions(permissions, ['body', 'permissions']);
      // A key can hand out only what it holds itself.
      requireCovered(principal.permissions, permissions, 'A key cannot grant permissions it lacks');
      const { view, key } = await createKey(db, pepper, {
        projectId: principal.projectId,
        name: req.body.name,
        permissions,
        createdBy: principal.keyId,
        cacheTtlSeconds: req.body.cache_ttl_seconds ?? null,
      });
      const budget: Budget | null = req.body.budget ?? null;
      if (budget) await budgets.set(principal.projectId, 'key', view.id, budget);
      return reply.code(201).send({ ...(await withBudget(view)), key });
    },
  );

  app.get(
    '/v1/api-keys',
    {
      config: { permission: 'keys:read' },
      schema: {
        tags,
        summary: "List the project's API keys (never their secrets)",
        querystring: Type.Object(PageQuery),
        response: responses({ 200: ListOf(ApiKey) }, 422),
      },
    },
    async (req) => {
      const { projectId } = principalOf(req);
      const page = await listKeys(db, projectId, pageOf(req.query));
      return { object: 'list' as const, ...page, data: await withBudgets(projectId, page.data) };
    },
  );

  app.delete(
    '/v1/api-keys/:id',
    {
      config: { permission: 'keys:write' },
      schema: {
        tags,
        summary: 'Revoke an API key',
        params: KeyParams,
        response: responses({ 200: ApiKey }, 403, 404, 422),
      },
    },
    async (req) => {
      const principal = principalOf(req);
      const view = await revokeKey(db, req.params.id, principal.projectId, (permissions) =>
        requireCovered(
          principal.permissions,
          permissions,
          'A key cannot revoke a key holding permissions it lacks',
        ),
      );
      auth.forget(view.id);
      return withBudget(view);
    },
  );

  app.get(
    '/v1/api-keys/:id',
    {
      config: { permission: 'keys:read' },
      schema: {
        tags,
        summary: 'An API key, with its budget and the spend of its current period',
        params: KeyParams,
        response: responses({ 200: ApiKey }, 404, 422),
      },
    },
    async (req) => withBudget(await findKey(db, req.params.id, principalOf(req).projectId)),
  );

  app.patch(
    '/v1/api-keys/:id',
    {
      config: { permission: 'keys:write' },
      schema: {
        tags,
        summary: 'Rename an API key or set its budget (`budget: null` removes it)',
        description:
          'A budget bounds what calls through the key may spend per period (`day`, `month`: UTC calendar ' +
          'periods; `total`). Once spent, every gateway route answers 429 `budget_exceeded` with ' +
          'Retry-After until the period resets. A key cannot change its own budget.',
        params: KeyParams,
        body: UpdateApiKey,
        response: responses({ 200: ApiKey }, 403, 404, 413, 415, 422),
      },
    },
    async (req) => {
      const principal = principalOf(req);
      const view = await findKey(db, req.params.id, principal.projectId);
      requireCovered(
        principal.permissions,
        view.permissions,
        'A key cannot change a key holding permissions it lacks',
      );
      const { name, budget } = req.body;
      if (budget !== undefined && view.id === principal.keyId) {
        throw new ApiError('permission_denied', 'A key cannot change its own budget', { id: view.id });
      }
      if (name !== undefined) await renameKey(db, view.id, name);
      if (budget !== undefined) await budgets.set(principal.projectId, 'key', view.id, budget);
      return withBudget({ ...view, ...(name === undefined ? {} : { name }) });
    },
  );
};
