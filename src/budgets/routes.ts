import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import { principalOf } from '../auth/guard.js';
import { BudgetFields, BudgetSchema } from '../http/budget-schemas.js';
import { responses } from '../http/schemas.js';
import type { BudgetAdmin, BudgetState } from '../shared/budget.js';
import { ApiError } from '../shared/errors.js';

const tags = ['budgets'];

const ProjectBudget = Type.Object({
  object: Type.Literal('project_budget'),
  project_id: Type.String(),
  ...BudgetFields,
});

const Params = Type.Object({
  project: Type.String({
    minLength: 1,
    maxLength: 200,
    description: "The caller's project id, or `current`",
  }),
});

/** What the project budget route needs. */
export interface BudgetPorts {
  budgets: BudgetAdmin;
}

/** The caller's project, named by its id or `current`; any other project is not found. */
function projectOf(req: { params: { project: string } }, own: string): string {
  const ref = req.params.project;
  if (ref !== 'current' && ref !== own) throw ApiError.notFound('Project', ref);
  return own;
}

const view = (projectId: string, state: BudgetState) => ({
  object: 'project_budget' as const,
  project_id: projectId,
  ...state,
});

export const budgetRoutes: FastifyPluginAsyncTypebox<{ ports: BudgetPorts }> = async (app, { ports }) => {
  const { budgets } = ports;

  app.get(
    '/v1/projects/:project/budget',
    {
      config: { permission: 'keys:read' },
      schema: {
        tags,
        summary: "The project's budget and the spend of its current period",
        params: Params,
        response: responses({ 200: ProjectBudget }, 404, 422),
      },
    },
    async (req) => {
      const projectId = projectOf(req, principalOf(req).projectId);
      return view(projectId, await budgets.get(projectId, 'project', projectId));
    },
  );

  app.put(
    '/v1/projects/:project/budget',
    {
      config: { permission: 'keys:write' },
      schema: {
        tags,
        summary: "Set the project's budget",
        description:
          'Bounds what the whole project spends per period (gateway calls through any of its keys and its ' +
          'evaluation runs). Once spent, the gateway answers 429 `budget_exceeded` (Retry-After until the ' +
          'period resets, none for `total`) and runs stop with that error, keeping what they scored.',
        params: Params,
        body: BudgetSchema,
        response: responses({ 200: ProjectBudget }, 404, 413, 415, 422),
      },
    },
    async (req) => {
      const projectId = projectOf(req, principalOf(req).projectId);
      return view(projectId, await budgets.set(projectId, 'project', projectId, req.body));
    },
  );

  app.delete(
    '/v1/projects/:project/budget',
    {
      config: { permission: 'keys:write' },
      schema: {
        tags,
        summary: "Remove the project's budget",
        params: Params,
        response: responses({ 200: ProjectBudget }, 404, 422),
      },
    },
    async (req) => {
      const projectId = projectOf(req, principalOf(req).projectId);
      return view(projectId, await budgets.set(projectId, 'project', projectId, null));
    },
  );
};
