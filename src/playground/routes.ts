import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import { principalOf } from '../auth/guard.js';
import { grants } from '../auth/permissions.js';
import { responses } from '../http/schemas.js';
import { PromptVersion } from '../prompts/schemas.js';
import { ApiError } from '../shared/errors.js';
import { openRequest } from './open.js';
import { EditableRequest, OpenQuery, PlaygroundRun, SaveVersion } from './schemas.js';
import { type PlaygroundPorts, prepareRun, saveVersion } from './service.js';
import { streamRun } from './stream.js';

const tags = ['playground'];

export type { PlaygroundPorts } from './service.js';

/**
 * `/v1/playground`: one edited request answered by 1–4 models side by side (streamed), each call made
 * through the one model call and recorded in the project's `playground` container; the request opened
 * from a prompt version or a recorded call; the edit saved as a prompt version.
 */
export const playgroundRoutes: FastifyPluginAsyncTypebox<{ ports: PlaygroundPorts }> = async (
  app,
  { ports },
) => {
  app.post(
    '/v1/playground/runs',
    {
      config: { permission: 'inference:write' },
      schema: {
        tags,
        summary: 'Run an edited request against 1–4 models side by side (server-sent events)',
        description:
          'The messages are rendered with `variables` ({{name}}, typed by `variable_types`), then sent with the ' +
          'tools, response format and parameters to every model at once, each call paid and limited as any ' +
          "other (the key's and the project's budgets, the model's limits) and recorded as a task log of the " +
          "project's `playground` container. Events: `start`, then `delta` (text), `answer` (output, usage, " +
          'latency, cost, task log id) and `scores` (the evaluators named, on that answer) each with the ' +
          "model's `index`, and `done` with every answer. Bad input (a missing variable, an unknown model or " +
          'evaluator, more than four models) is refused before the stream starts. See docs/playground.md.',
        body: PlaygroundRun,
        response: {
          ...responses({}, 403, 404, 413, 415, 422, 501),
          200: {
            description: 'Server-sent events',
            content: { 'text/event-stream': { schema: Type.String() } },
          },
        },
      },
    },
    async (req, reply) => {
      const run = await prepareRun(ports, principalOf(req), req.body);
      await streamRun(ports, run, reply);
    },
  );

  app.get(
    '/v1/playground/request',
    {
      config: { permission: 'logs:read' },
      schema: {
        tags,
        summary: 'A prompt version, task log, model-call span or session turn as an editable request',
        description:
          'Exactly one of `prompt` (with `version` or `label`; default the latest), `task_log`, `span` ' +
          '(with its `trace`) or `session` (with `turn`, 0 for the first). A recorded call opens as the ' +
          'request it sent (messages rendered, tools, response format, parameters); a prompt version as its ' +
          'template with its variables to fill.',
        querystring: OpenQuery,
        response: responses({ 200: EditableRequest }, 403, 404, 422),
      },
    },
    async (req) => {
      const principal = principalOf(req);
      if (req.query.prompt !== undefined && !grants(principal.permissions, 'prompts:read')) {
        throw new ApiError('permission_denied', "This API key lacks the 'prompts:read' permission", {
          required: 'prompts:read',
        });
      }
      return openRequest(ports.db, principal.projectId, req.query);
    },
  );

  app.post(
    '/v1/playground/versions',
    {
      config: { permission: 'prompts:write' },
      schema: {
        tags,
        summary: 'Save the edited request as the next version of a prompt (or a new prompt)',
        body: SaveVersion,
        response: responses({ 201: PromptVersion }, 403, 413, 415, 422),
      },
    },
    async (req, reply) => reply.code(201).send(await saveVersion(ports.db, principalOf(req), req.body)),
  );
};
