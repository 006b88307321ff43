import { z } from 'zod';
import { checkSampleAccess } from '../../runs/access.js';
import { compareRuns } from '../../runs/compare.js';
import { listSamples } from '../../runs/samples.js';
import { CreateRun, type Run, type RunSample } from '../../runs/schemas.js';
import { createRun, listRuns, requireRun, toRun, withQueue } from '../../runs/service.js';
import { RUN_STATUSES } from '../../shared/run-status.js';
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

const runLinks = (call: ToolCall, id: string) =>
  links(call, `runs/${seg(id)}`, `/v1/evaluation/runs/${seg(id)}`);

/** A run in a list: what it is and where it stands, without its plan and per-model breakdown. */
function runLine(call: ToolCall, run: Run) {
  return {
    id: run.id,
    name: run.name,
    status: run.status,
    created_at: run.created_at,
    finished_at: run.finished_at,
    evaluators: run.evaluators,
    container: run.container,
    dataset_id: run.dataset_id,
    avg_score: run.results?.overall?.avg_score ?? null,
    avg_accuracy: run.results?.overall?.avg_accuracy ?? null,
    links: runLinks(call, run.id),
  };
}

const listRunsTool = defineTool({
  name: 'list_runs',
  title: 'List evaluation runs',
  description: 'Evaluation runs of the project, newest first, with their status and overall scores.',
  permission: 'evaluation:read',
  readOnly: true,
  input: z
    .object({
      container: z.string().min(1).max(200).optional().describe('Only runs over this container'),
      status: z.enum(RUN_STATUSES).optional().describe('Only runs in this status'),
      name: z.string().min(1).max(200).optional().describe('Only runs with exactly this name'),
      ...PageArgs,
    })
    .strict(),
  async run(call, args) {
    const page = pageFrom(args);
    const list = await listRuns(
      call.ports.runs,
      call.principal.projectId,
      { container: args.container ?? null, status: args.status ?? null, name: args.name ?? null },
      page,
    );
    const next = nextCursor(page, list.data.length, list.total);
    return {
      summary: `${list.total} run(s); showing ${list.data.length} from ${page.offset}`,
      content: { total: list.total, runs: list.data.map((r) => runLine(call, r)), next_cursor: next },
    };
  },
});

const getRunTool = defineTool({
  name: 'get_run',
  title: 'Get an evaluation run',
  description:
    'One run with its results: status, progress, overall and per-evaluator scores per model, errors. Per-sample rows: list_run_samples.',
  permission: 'evaluation:read',
  readOnly: true,
  input: z.object({ run_id: z.string().min(1).max(200) }).strict(),
  async run(call, args) {
    const { runs } = call.ports;
    const run = await withQueue(
      runs,
      toRun(await requireRun(runs.db, call.principal.projectId, args.run_id), runs.sourceKinds),
    );
    const { config: _config, ...shown } = run;
    return {
      summary: `Run ${run.id}${run.name ? ` (${run.name})` : ''}: ${run.status}`,
      content: { ...(compact(shown, 500) as Record<string, unknown>), links: runLinks(call, run.id) },
    };
  },
});

function sampleLine(s: RunSample) {
  return compact(s, 500) as Record<string, unknown>;
}

const listRunSamplesTool = defineTool({
  name: 'list_run_samples',
  title: "List a run's samples",
  description:
    "A run's per-sample results (input, output, score, verdict, reasoning), filtered by evaluator, verdict or status.",
  permission: 'evaluation:read',
  readOnly: true,
  input: z
    .object({
      run_id: z.string().min(1).max(200),
      evaluator: z.string().min(1).max(300).optional().describe('Evaluator id or name'),
      passed: z.boolean().optional(),
      status: z.enum(['scored', 'error', 'missing']).optional(),
      ...PageArgs,
    })
    .strict(),
  async run(call, args) {
    const { principal } = call;
    const run = await requireRun(call.ports.runs.db, principal.projectId, args.run_id);
    checkSampleAccess(call.ports.runs, run.plan, principal.permissions);
    const page = pageFrom(args);
    const list = await listSamples(
      call.ports.runs.db,
      run,
      {
        ...(args.evaluator === undefined ? {} : { evaluator: args.evaluator }),
        ...(args.passed === undefined ? {} : { passed: args.passed }),
        ...(args.status === undefined ? {} : { status: args.status }),
      },
      page,
    );
    const next = nextCursor(page, list.data.length, list.total);
    return {
      summary: `${list.total} sample(s); showing ${list.data.length} from ${page.offset}`,
      content: {
        total: list.total,
        samples: list.data.map(sampleLine),
        next_cursor: next,
        links: links(call, `runs/${seg(run.id)}`, `/v1/evaluation/runs/${seg(run.id)}/samples`),
      },
    };
  },
});

const compareRunsTool = defineTool({
  name: 'compare_runs',
  title: 'Compare two runs',
  description:
    'Paired comparison of a run with a baseline run: per evaluator and launch, the mean score difference with its 95% interval, pass-rate change, verdict (better, worse, inconclusive), and the worst regressed items.',
  permission: 'evaluation:read',
  readOnly: true,
  input: z
    .object({
      run_id: z.string().min(1).max(200).describe('The candidate run'),
      baseline: z.string().min(1).max(200).describe('The run to compare against'),
      limit: z
        .number()
        .int()
        .min(1)
        .max(100)
        .optional()
        .describe('Regressions listed per comparison (default 10)'),
    })
    .strict(),
  async run(call, args) {
    const { principal } = call;
    const comparison = await compareRuns(
      call.ports.runs.db,
      principal.projectId,
      args.run_id,
      args.baseline,
      args.limit ?? 10,
      (run) => checkSampleAccess(call.ports.runs, run.plan, principal.permissions),
    );
    const s = comparison.summary;
    return {
      summary: `${args.run_id} vs ${args.baseline}: ${s.comparisons_better} better, ${s.comparisons_worse} worse of ${s.comparisons} comparison(s)${comparison.partial ? ' (partial: a run has not completed)' : ''}`,
      content: {
        ...(compact(comparison, 500) as Record<string, unknown>),
        links: {
          ...runLinks(call, args.run_id),
          api: `${call.origin}/v1/evaluation/runs/${seg(args.run_id)}/compare?baseline=${seg(args.baseline)}`,
        },
      },
    };
  },
});

const startRunTool = defineTool({
  name: 'start_run',
  title: 'Start an evaluation run',
  description:
    'Launches a run: `run` is the body of POST /v1/evaluation/runs (evaluators, and a sample side: a dataset, a container, a generate side naming models and prompts…). Answers the queued run; follow it with get_run.',
  permission: 'evaluation:write',
  readOnly: false,
  input: z
    .object({
      run: z
        .record(z.string(), z.unknown())
        .describe('The run to create, as POST /v1/evaluation/runs takes it (see docs/runs.md)'),
      idempotency_key: z
        .string()
        .min(1)
        .max(200)
        .optional()
        .describe('Same key and body answer the same run'),
    })
    .strict(),
  async run(call, args) {
    const body = checked(CreateRun, args.run, 'body');
    const run = await createRun(call.ports.runs, call.principal, body, args.idempotency_key ?? null);
    return {
      summary: `Run ${run.id} ${run.status}`,
      content: { run: runLine(call, run), links: runLinks(call, run.id) },
    };
  },
});

export const RUN_TOOLS: readonly McpTool[] = [
  listRunsTool,
  getRunTool,
  listRunSamplesTool,
  compareRunsTool,
  startRunTool,
];
