import { z } from 'zod';
import { checkSampleAccess } from '../../runs/access.js';
import { compareAsAsked } from '../../runs/compare.js';
import { CreateRun } from '../../runs/schemas.js';
import { createRun } from '../../runs/service.js';
import { checked } from '../body.js';
import { compact, defineTool, links, type McpTool, seg, type ToolCall } from '../tool.js';

/**
 * Experiments for agents: prompt versions × models over a dataset version, one run (the same run
 * creation as POST /v1/evaluation/runs, with the key's permissions), and the run's launches compared per
 * prompt version or per model (the same paired comparison as GET …/compare?by=).
 */

const runLinks = (call: ToolCall, id: string) =>
  links(call, `runs/${seg(id)}`, `/v1/evaluation/runs/${seg(id)}`);

const Pick = z
  .object({
    name: z.string().min(1).max(200).describe('Prompt name or id'),
    version: z.number().int().min(1).optional().describe('A version number'),
    label: z.string().min(1).max(63).optional().describe('A label (resolved to its version now)'),
  })
  .strict();

const startExperimentTool = defineTool({
  name: 'start_experiment',
  title: 'Start an experiment',
  description:
    "Runs prompt versions × models over a dataset (version) as one evaluation run: each version is rendered over every item (the item's input fields fill its variables) and answered by each model, then scored by the evaluators. Without models, each version runs on its own model. Follow it with get_run; compare its versions with compare_runs (by: prompt_version).",
  permission: 'evaluation:write',
  readOnly: false,
  input: z
    .object({
      container: z.string().min(1).max(200).describe('Container id or label the run belongs to'),
      dataset: z.string().min(1).max(200).describe('Dataset id or label whose items are rendered'),
      dataset_version: z
        .number()
        .int()
        .min(1)
        .optional()
        .describe('Default: the latest, recorded on the run'),
      range: z
        .string()
        .regex(/^\d+:\d+$/)
        .optional()
        .describe('Items start:end (default 0:100)'),
      prompts: z
        .array(Pick)
        .min(1)
        .max(16)
        .describe('Prompt versions (a version or a label; neither: the latest)'),
      models: z
        .array(z.string().min(1).max(300))
        .min(1)
        .max(32)
        .optional()
        .describe('Models (ids or labels)'),
      parameters: z
        .record(z.string(), z.unknown())
        .optional()
        .describe(
          'Sampling parameters over the versions’ own: temperature, max_tokens, top_p, stop, seed, …',
        ),
      evaluators: z.array(z.string().min(1).max(300)).min(1).max(50).describe('Evaluator ids or names'),
      name: z.string().min(1).max(200).optional().describe('A name for the run'),
      idempotency_key: z
        .string()
        .min(1)
        .max(200)
        .optional()
        .describe('Same key and body answer the same run'),
    })
    .strict(),
  async run(call, args) {
    const range = args.range?.split(':').map(Number);
    const span = range ? `0:${(range[1] ?? 0) - (range[0] ?? 0)}` : undefined;
    const body = checked(
      CreateRun,
      {
        container: args.container,
        evaluators: args.evaluators,
        sample: {
          type: 'generate',
          prompts: args.prompts,
          ...(args.models ? { models: args.models } : {}),
          ...(args.parameters ? { parameters: args.parameters } : {}),
          ...(span ? { range: span } : {}),
        },
        ground_truth: {
          type: 'dataset',
          dataset: args.dataset,
          ...(args.dataset_version !== undefined ? { version: args.dataset_version } : {}),
          ...(args.range ? { range: args.range } : {}),
        },
        ...(args.name ? { name: args.name } : {}),
      },
      'body',
    );
    const run = await createRun(call.ports.runs, call.principal, body, args.idempotency_key ?? null);
    return {
      summary: `Experiment run ${run.id} ${run.status}`,
      content: {
        run: {
          id: run.id,
          name: run.name,
          status: run.status,
          sample: run.sample,
          ground_truth: run.ground_truth,
          evaluators: run.evaluators,
        },
        links: runLinks(call, run.id),
      },
    };
  },
});

const compareLaunchesTool = defineTool({
  name: 'compare_prompt_versions',
  title: "Compare an experiment's prompt versions or models",
  description:
    'Within one run: each prompt version against the reference version on the same model (by: prompt_version), or each model against the reference model on the same version (by: model). Per evaluator: the mean score difference with its 95% interval, the verdict, pass-rate change and the worst regressed items.',
  permission: 'evaluation:read',
  readOnly: true,
  input: z
    .object({
      run_id: z.string().min(1).max(200),
      by: z.enum(['prompt_version', 'model']).optional().describe('Default prompt_version'),
      reference: z
        .string()
        .min(1)
        .max(300)
        .optional()
        .describe('NAME@VERSION, NAME@LABEL or a model; default: the run’s first'),
      limit: z.number().int().min(1).max(100).optional().describe('Regressions per comparison (default 10)'),
    })
    .strict(),
  async run(call, args) {
    const { principal } = call;
    const by = args.by ?? 'prompt_version';
    const comparison = await compareAsAsked(
      call.ports.runs.db,
      principal.projectId,
      args.run_id,
      {
        by,
        ...(args.reference ? { reference: args.reference } : {}),
        ...(args.limit ? { limit: args.limit } : {}),
      },
      (run) => checkSampleAccess(call.ports.runs, run.plan, principal.permissions),
    );
    const s = comparison.summary;
    return {
      summary: `${args.run_id} by ${by}: ${s.comparisons_better} better, ${s.comparisons_worse} worse of ${s.comparisons} comparison(s)${comparison.partial ? ' (partial: the run has not completed)' : ''}`,
      content: {
        ...(compact(comparison, 500) as Record<string, unknown>),
        links: {
          ...runLinks(call, args.run_id),
          api: `${call.origin}/v1/evaluation/runs/${seg(args.run_id)}/compare?by=${by}`,
        },
      },
    };
  },
});

export const EXPERIMENT_TOOLS: readonly McpTool[] = [startExperimentTool, compareLaunchesTool];
