import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { principalOf } from '../auth/guard.js';
import { pageOf, responses } from '../http/schemas.js';
import { diffVersions } from './diff.js';
import {
  CreatePrompt,
  CreatePromptVersion,
  DiffQuery,
  GetPromptQuery,
  LabelParam,
  ListPromptsQuery,
  MoveLabel,
  Prompt,
  PromptDiff,
  PromptLabel,
  PromptLabelDeleted,
  PromptLabelList,
  PromptList,
  PromptParam,
  PromptVersion,
  PromptVersionList,
  VersionParam,
} from './schemas.js';
import * as service from './service.js';

const tags = ['prompts'];
const read = { permission: 'prompts:read' } as const;
const write = { permission: 'prompts:write' } as const;

export type { PromptPorts } from './service.js';

/** `/v1/prompts`: versioned prompts of the project, their labels, diffs and rollbacks. */
export const promptRoutes: FastifyPluginAsyncTypebox<{ ports: service.PromptPorts }> = async (
  app,
  { ports },
) => {
  app.get(
    '/v1/prompts',
    {
      config: read,
      schema: {
        tags,
        summary: 'Prompts of the project, newest first, with their labels',
        querystring: ListPromptsQuery,
        response: responses({ 200: PromptList }, 422),
      },
    },
    async (req) => service.listPrompts(ports, principalOf(req).projectId, pageOf(req.query), req.query.name),
  );

  app.post(
    '/v1/prompts',
    {
      config: write,
      schema: {
        tags,
        summary: 'Create a prompt with its first version',
        body: CreatePrompt,
        response: responses({ 201: Prompt }, 409, 413, 415, 422),
      },
    },
    async (req, reply) => reply.code(201).send(await service.createPrompt(ports, principalOf(req), req.body)),
  );

  app.get(
    '/v1/prompts/:prompt',
    {
      config: read,
      schema: {
        tags,
        summary: 'A prompt by id or name, at a label or version (default: the latest)',
        params: PromptParam,
        querystring: GetPromptQuery,
        response: responses({ 200: Prompt }, 404, 422),
      },
    },
    async (req) =>
      service.toPrompt(
        await service.resolvePrompt(ports.db, principalOf(req).projectId, req.params.prompt, req.query),
      ),
  );

  await app.register(versionRoutes, { ports });
  await app.register(labelRoutes, { ports });
};

/** A prompt's versions and their diffs. */
const versionRoutes: FastifyPluginAsyncTypebox<{ ports: service.PromptPorts }> = async (app, { ports }) => {
  app.get(
    '/v1/prompts/:prompt/versions',
    {
      config: read,
      schema: {
        tags,
        summary: "A prompt's versions, newest first",
        params: PromptParam,
        querystring: ListPromptsQuery,
        response: responses({ 200: PromptVersionList }, 404, 422),
      },
    },
    async (req) =>
      service.listVersions(ports, principalOf(req).projectId, req.params.prompt, pageOf(req.query)),
  );

  app.post(
    '/v1/prompts/:prompt/versions',
    {
      config: write,
      schema: {
        tags,
        summary: 'Create the next version of a prompt (versions are immutable)',
        params: PromptParam,
        body: CreatePromptVersion,
        response: responses({ 201: PromptVersion }, 404, 413, 415, 422),
      },
    },
    async (req, reply) =>
      reply.code(201).send(await service.createVersion(ports, principalOf(req), req.params.prompt, req.body)),
  );

  app.get(
    '/v1/prompts/:prompt/versions/:version',
    {
      config: read,
      schema: {
        tags,
        summary: 'One version of a prompt',
        params: VersionParam,
        response: responses({ 200: PromptVersion }, 404, 422),
      },
    },
    async (req) => {
      const r = await service.resolvePrompt(ports.db, principalOf(req).projectId, req.params.prompt, {
        version: req.params.version,
      });
      return service.toVersion(r.prompt, r.version, r.labels);
    },
  );

  app.get(
    '/v1/prompts/:prompt/diff',
    {
      config: read,
      schema: {
        tags,
        summary: 'What changed between two versions: messages (unified diffs), model, parameters, tools',
        params: PromptParam,
        querystring: DiffQuery,
        response: responses({ 200: PromptDiff }, 404, 422),
      },
    },
    async (req) => {
      const { projectId } = principalOf(req);
      const a = await service.resolvePrompt(ports.db, projectId, req.params.prompt, {
        version: req.query.from,
      });
      const b = await service.resolvePrompt(ports.db, projectId, req.params.prompt, {
        version: req.query.to,
      });
      return diffVersions(
        service.toVersion(a.prompt, a.version, a.labels),
        service.toVersion(b.prompt, b.version, b.labels),
      );
    },
  );
};

/** A prompt's labels: list, move, roll back, delete. */
const labelRoutes: FastifyPluginAsyncTypebox<{ ports: service.PromptPorts }> = async (app, { ports }) => {
  app.get(
    '/v1/prompts/:prompt/labels',
    {
      config: read,
      schema: {
        tags,
        summary: "A prompt's labels (latest aside) and each one's moves, newest first",
        params: PromptParam,
        response: responses({ 200: PromptLabelList }, 404, 422),
      },
    },
    async (req) => service.listLabels(ports, principalOf(req).projectId, req.params.prompt),
  );

  app.put(
    '/v1/prompts/:prompt/labels/:label',
    {
      config: write,
      schema: {
        tags,
        summary: 'Move a label (created on first use) to a version of the prompt',
        params: LabelParam,
        body: MoveLabel,
        response: responses({ 200: PromptLabel }, 404, 413, 415, 422),
      },
    },
    async (req) =>
      service.moveLabel(ports, principalOf(req), req.params.prompt, req.params.label, req.body.version),
  );

  app.post(
    '/v1/prompts/:prompt/labels/:label/rollback',
    {
      config: write,
      schema: {
        tags,
        summary: 'Move a label back to the version its latest move took it from',
        params: LabelParam,
        response: responses({ 200: PromptLabel }, 404, 409, 422),
      },
    },
    async (req) => service.rollbackLabel(ports, principalOf(req), req.params.prompt, req.params.label),
  );

  app.delete(
    '/v1/prompts/:prompt/labels/:label',
    {
      config: write,
      schema: {
        tags,
        summary: 'Remove a label (its moves are kept)',
        params: LabelParam,
        response: responses({ 200: PromptLabelDeleted }, 404, 422),
      },
    },
    async (req) => service.deleteLabel(ports, principalOf(req), req.params.prompt, req.params.label),
  );
};
