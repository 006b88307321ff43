import { z } from 'zod';
import { listTemplates } from '../../catalog/judge-templates/catalog.js';
import { CreateEvaluator, type Evaluator } from '../../evaluators/schemas.js';
import { createEvaluator, listEvaluators } from '../../evaluators/service.js';
import { evaluatorAgreement, queueAgreement } from '../../review/agreement/service.js';
import { ApiError } from '../../shared/errors.js';
import { checked } from '../body.js';
import {
  compact,
  defineTool,
  links,
  type McpTool,
  nextCursor,
  PageArgs,
  pageFrom,
  seg,
  type ToolCall,
} from '../tool.js';

const evaluatorLinks = (call: ToolCall, id: string) =>
  links(call, `evaluators/${seg(id)}`, `/v1/evaluators/${seg(id)}`);

/** An evaluator as an agent picks one: what it is and judges with, without its prompt or source. */
function evaluatorLine(call: ToolCall, e: Evaluator) {
  const fields = e as Record<string, unknown>;
  return {
    id: e.id,
    name: e.name,
    kind: e.object,
    ...(typeof fields.type === 'string' ? { grader_type: fields.type } : {}),
    description: compact(e.description, 300),
    container: e.container,
    ...(typeof fields.model === 'string' ? { model: fields.model } : {}),
    ...(typeof fields.template === 'string' ? { template: fields.template } : {}),
    links: evaluatorLinks(call, e.id),
  };
}

const listEvaluatorsTool = defineTool({
  name: 'list_evaluators',
  title: 'List evaluators',
  description: "The project's evaluators (judges, code evaluators, graders), newest first.",
  permission: 'evaluators:read',
  readOnly: true,
  input: z
    .object({
      container: z.string().min(1).max(200).optional().describe('Only evaluators of this container'),
      include_project_wide: z.boolean().optional().describe('With container: project-wide ones too'),
      ...PageArgs,
    })
    .strict(),
  async run(call, args) {
    const page = pageFrom(args);
    const list = await listEvaluators(
      call.ports.evaluators,
      call.principal.projectId,
      args.container,
      page,
      args.include_project_wide === true,
    );
    const next = nextCursor(page, list.data.length, list.total);
    return {
      summary: `${list.total} evaluator(s); showing ${list.data.length} from ${page.offset}`,
      content: {
        total: list.total,
        evaluators: list.data.map((e) => evaluatorLine(call, e)),
        next_cursor: next,
      },
    };
  },
});

const listTemplatesTool = defineTool({
  name: 'list_evaluator_templates',
  title: 'List evaluator templates',
  description:
    'The judge catalog: built-in, versioned judge prompts (faithfulness, relevance, …) with their scale and variables. Make one an evaluator with create_evaluator_from_template.',
  permission: 'evaluators:read',
  readOnly: true,
  input: z.object({ ...PageArgs }).strict(),
  async run(call, args) {
    const all = listTemplates();
    const page = pageFrom(args);
    const shown = all.slice(page.offset, page.offset + page.limit);
    return {
      summary: `${all.length} template(s); showing ${shown.length} from ${page.offset}`,
      content: {
        total: all.length,
        templates: shown.map((t) => ({
          id: t.id,
          title: t.title,
          description: t.description,
          scale: t.scale,
          pass_threshold: t.pass_threshold,
          variables: t.variables,
        })),
        next_cursor: nextCursor(page, shown.length, all.length),
        links: { api: `${call.origin}/v1/evaluator-templates` },
      },
    };
  },
});

const createFromTemplateTool = defineTool({
  name: 'create_evaluator_from_template',
  title: 'Create an evaluator from a template',
  description:
    'Makes a judge evaluator from a catalog template (its prompt, scale and pass threshold), judged by the given model.',
  permission: 'evaluators:write',
  readOnly: false,
  input: z
    .object({
      template: z.string().min(1).max(200).describe('`name@version`, or `name` for its latest version'),
      model: z.string().min(1).max(300).describe('The judge model (a registered model label or slug)'),
      name: z.string().min(1).max(200).optional().describe('Default: the template name'),
      container: z.string().min(1).max(200).optional().describe('Its container; default: project-wide'),
      pass_threshold: z.number().optional().describe("Default: the template's"),
      description: z.string().max(10_000).optional(),
    })
    .strict(),
  async run(call, args) {
    const body = checked(
      CreateEvaluator,
      {
        type: 'judge',
        template: args.template,
        model: args.model,
        name: args.name ?? args.template.split('@')[0],
        ...(args.container === undefined ? {} : { container: args.container }),
        ...(args.pass_threshold === undefined ? {} : { pass_threshold: args.pass_threshold }),
        ...(args.description === undefined ? {} : { description: args.description }),
      },
      'body',
    );
    const evaluator = await createEvaluator(call.ports.evaluators, call.principal.projectId, body);
    return {
      summary: `Evaluator ${evaluator.name} (${evaluator.id}) created from ${args.template}`,
      content: { evaluator: evaluatorLine(call, evaluator), links: evaluatorLinks(call, evaluator.id) },
    };
  },
});

const agreementTool = defineTool({
  name: 'get_agreement',
  title: 'Judge–human agreement',
  description:
    "How well an evaluator agrees with human reviews (κ, correlations, MAE, confusion matrix, bootstrap intervals), over all its reviews, one queue's or one run's; or, given only a queue, each of the queue's rubric evaluators.",
  permission: 'review:read',
  readOnly: true,
  input: z
    .object({
      evaluator: z.string().min(1).max(300).optional().describe('Evaluator id or name'),
      queue: z.string().min(1).max(200).optional().describe('Annotation queue id or name'),
      run: z.string().min(1).max(100).optional().describe('With evaluator: only this run'),
      seed: z.number().int().min(0).max(2_147_483_647).optional(),
    })
    .strict(),
  async run(call, args) {
    const { db } = call.ports.review;
    const { projectId } = call.principal;
    const seed = args.seed === undefined ? {} : { seed: args.seed };
    if (args.evaluator !== undefined) {
      const agreement = await evaluatorAgreement(db, projectId, args.evaluator, {
        ...seed,
        ...(args.queue === undefined ? {} : { queue: args.queue }),
        ...(args.run === undefined ? {} : { run: args.run }),
      });
      return {
        summary: `Agreement of ${args.evaluator} with human reviews`,
        content: {
          ...(compact(agreement, 500) as Record<string, unknown>),
          links: links(call, 'review', `/v1/evaluators/${seg(args.evaluator)}/agreement`),
        },
      };
    }
    if (args.queue === undefined)
      throw ApiError.invalid(['evaluator'], 'Name an evaluator, a queue, or both');
    if (args.run !== undefined)
      throw ApiError.invalid(['run'], 'A run narrows an evaluator: name the evaluator');
    const agreement = await queueAgreement(db, projectId, args.queue, seed);
    return {
      summary: `Agreement of ${agreement.evaluators.length} evaluator(s) of queue ${args.queue}`,
      content: {
        ...(compact(agreement, 500) as Record<string, unknown>),
        links: links(call, 'review', `/v1/annotation-queues/${seg(args.queue)}/agreement`),
      },
    };
  },
});

export const EVALUATOR_TOOLS: readonly McpTool[] = [
  listEvaluatorsTool,
  listTemplatesTool,
  createFromTemplateTool,
  agreementTool,
];
