import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import { ListOf, responses } from '../../http/schemas.js';
import { ApiError } from '../../shared/errors.js';
import { findTemplate, JudgeTemplate, listTemplates } from './catalog.js';

const tags = ['evaluators'];
const TemplateParam = Type.Object({
  template: Type.String({
    minLength: 1,
    maxLength: 200,
    description: '`name@version`, or `name` for its latest version',
  }),
});

/** The judge catalog, read-only: the same for every project. */
export const judgeTemplateRoutes: FastifyPluginAsyncTypebox = async (app) => {
  app.get(
    '/v1/evaluator-templates',
    {
      config: { permission: 'evaluators:read' },
      schema: {
        tags,
        summary: 'The judge catalog: built-in, versioned judge prompts with their scale and variables',
        response: responses({ 200: ListOf(JudgeTemplate) }),
      },
    },
    async () => {
      const data = listTemplates();
      return { object: 'list' as const, data, total: data.length };
    },
  );

  app.get(
    '/v1/evaluator-templates/:template',
    {
      config: { permission: 'evaluators:read' },
      schema: {
        tags,
        summary: 'One catalog template by `name@version` (or its latest version by `name`)',
        params: TemplateParam,
        response: responses({ 200: JudgeTemplate }, 404, 422),
      },
    },
    async (req) => {
      const found = findTemplate(req.params.template);
      if (!found) throw ApiError.notFound('Evaluator template', req.params.template);
      return found;
    },
  );
};
