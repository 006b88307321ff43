import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { principalOf } from '../auth/guard.js';
import { pageOf, responses } from '../http/schemas.js';
import {
  CreateGuardPolicy,
  GuardParam,
  GuardPolicy,
  GuardPolicyDeleted,
  GuardPolicyList,
  GuardVerdictList,
  GuardVerdictSummary,
  ListGuardsQuery,
  ListVerdictsQuery,
  UpdateGuardPolicy,
  VerdictSummaryQuery,
} from './schemas.js';
import * as service from './service.js';
import { verdictSummary } from './summary.js';

const tags = ['guards'];
const read = { permission: 'guards:read' } as const;
const write = { permission: 'guards:write' } as const;

export type { GuardPorts } from './service.js';

/** `/v1/guards`: the project's guard policies (checks the gateway runs on calls) and their verdicts. */
export const guardRoutes: FastifyPluginAsyncTypebox<{ ports: service.GuardPorts }> = async (
  app,
  { ports },
) => {
  app.get(
    '/v1/guards',
    {
      config: read,
      schema: {
        tags,
        summary: 'Guard policies of the project, oldest first (the order the gateway applies them in)',
        querystring: ListGuardsQuery,
        response: responses({ 200: GuardPolicyList }, 422),
      },
    },
    async (req) => service.listPolicies(ports, principalOf(req).projectId, pageOf(req.query)),
  );

  app.post(
    '/v1/guards',
    {
      config: write,
      schema: {
        tags,
        summary:
          'Create a guard policy: ordered checks with a stage, an action, a timeout and a failure mode',
        description:
          'Each check is a built-in guard (pii, secrets, deny_list, regex, json_schema, prompt_injection, ' +
          'language, length) or an evaluator of the project. A regular expression that does not compile, a ' +
          "JSON Schema that does not, another project's evaluator, or redaction by a guard that cannot say " +
          'what to replace answer 422 naming each problem. See docs/guards.md.',
        body: CreateGuardPolicy,
        response: responses({ 201: GuardPolicy }, 409, 413, 415, 422),
      },
    },
    async (req, reply) =>
      reply.code(201).send(await service.createPolicy(ports, principalOf(req).projectId, req.body)),
  );

  app.get(
    '/v1/guards/verdicts',
    {
      config: read,
      schema: {
        tags,
        summary: "Verdicts of the project's guards, newest first: one score per check per call",
        querystring: ListVerdictsQuery,
        response: responses({ 200: GuardVerdictList }, 422),
      },
    },
    async (req) =>
      service.listVerdicts(
        ports,
        principalOf(req).projectId,
        { taskLogId: req.query.task_log_id, guard: req.query.guard, verdict: req.query.verdict },
        pageOf(req.query),
      ),
  );

  app.get(
    '/v1/guards/verdicts/summary',
    {
      config: read,
      schema: {
        tags,
        summary:
          'Per check: blocked, flagged, redacted and error verdicts over a window, with the latest ones',
        description:
          'Counts per check name over [since, until) (default: the last 24 hours), the checks with the most ' +
          'verdicts first (at most 100), each with its latest `examples` verdicts (3) and the model of their ' +
          'call. An empty or reversed window answers 422.',
        querystring: VerdictSummaryQuery,
        response: responses({ 200: GuardVerdictSummary }, 422),
      },
    },
    async (req) => verdictSummary(ports.db, principalOf(req).projectId, req.query),
  );

  app.get(
    '/v1/guards/:guard',
    {
      config: read,
      schema: {
        tags,
        summary: 'A guard policy by id or name',
        params: GuardParam,
        response: responses({ 200: GuardPolicy }, 404, 422),
      },
    },
    async (req) =>
      service.toPolicy(await service.requirePolicy(ports.db, principalOf(req).projectId, req.params.guard)),
  );

  app.patch(
    '/v1/guards/:guard',
    {
      config: write,
      schema: {
        tags,
        summary: 'Change a guard policy (name, description, enabled, applies_to, checks)',
        params: GuardParam,
        body: UpdateGuardPolicy,
        response: responses({ 200: GuardPolicy }, 404, 409, 413, 415, 422),
      },
    },
    async (req) => service.updatePolicy(ports, principalOf(req).projectId, req.params.guard, req.body),
  );

  app.delete(
    '/v1/guards/:guard',
    {
      config: write,
      schema: {
        tags,
        summary: 'Delete a guard policy (its verdicts stay)',
        params: GuardParam,
        response: responses({ 200: GuardPolicyDeleted }, 404, 422),
      },
    },
    async (req) => service.deletePolicy(ports, principalOf(req).projectId, req.params.guard),
  );
};
