import { type Static, Type } from 'typebox';
import { FreeObject, ListOf, Nullable, PageQuery } from '../http/schemas.js';
import { RUN_STATUSES } from '../shared/run-status.js';
import { DataSource } from './data-source-schema.js';

export { isTerminal, RUN_STATUSES, type RunStatus, TERMINAL } from '../shared/run-status.js';
export { DataSource, RANGE_PATTERN } from './data-source-schema.js';

/** A run's name: what people call it in lists and pickers (not unique; ids stay the references). */
export const RunName = Type.String({
  minLength: 1,
  maxLength: 200,
  pattern: '\\S',
  description: 'A name for the run, shown beside its id (not unique)',
});

export const CreateRun = Type.Object(
  {
    container: Type.String({ minLength: 1, maxLength: 200, description: 'Container id or label' }),
    evaluators: Type.Array(Type.String({ minLength: 1, maxLength: 300 }), {
      minItems: 1,
      maxItems: 50,
      description: 'Evaluator ids or names',
    }),
    sample: Type.Optional(Nullable(DataSource)),
    ground_truth: Type.Optional(Nullable(DataSource)),
    baseline: Type.Optional(Nullable(DataSource)),
    name: Type.Optional(Nullable(RunName)),
    metadata: Type.Optional(Nullable(FreeObject())),
    cache: Type.Optional(
      Nullable(
        Type.Object(
          {
            mode: Type.Optional(
              Type.Enum(['use', 'refresh'], {
                description:
                  'use (default): answer identical calls from the cache; refresh: call and overwrite',
              }),
            ),
            ttl_seconds: Type.Optional(
              Type.Integer({
                minimum: 1,
                maximum: 2_592_000,
                description: 'Lifetime of the entries written',
              }),
            ),
          },
          {
            additionalProperties: false,
            description:
              "The response cache for the run's generation and judge calls: a run re-run with it pays nothing " +
              'for the calls it made before',
          },
        ),
      ),
    ),
    // Document-only default (src/http/openapi-document.ts), so that request hashes stay as they are.
    environment: Type.Optional(
      Type.Union([Type.String({ minLength: 1, maxLength: 100 }), Type.Null()], { 'x-default': 'main' }),
    ),
  },
  { additionalProperties: false },
);
export type CreateRun = Static<typeof CreateRun>;

/** A prompt version a run renders: the label it was named by is resolved when the run is created. */
export const ResolvedPrompt = Type.Object({
  id: Type.String(),
  name: Type.String(),
  version: Type.Integer({ minimum: 1 }),
  label: Nullable(Type.String({ description: 'The label the request named, or null' })),
});

/** A side after resolution: its type, the referenced resource's id, and the range in force. */
export const ResolvedSource = Type.Object(
  {
    type: Type.String(),
    dataset: Type.Optional(Type.String()),
    version: Type.Optional(Type.Integer({ minimum: 1, description: 'type=dataset: the version read' })),
    split: Type.Optional(Type.String({ description: 'type=dataset: the split read' })),
    container: Type.Optional(Type.String()),
    models: Type.Optional(Type.Array(Type.String())),
    prompts: Type.Optional(
      Type.Array(ResolvedPrompt, { description: 'type=generate: an experiment’s prompt versions' }),
    ),
    parameters: Type.Optional(FreeObject('type=generate: the sampling parameters the side gave')),
    user_model: Type.Optional(Type.String()),
    max_turns: Type.Optional(Type.Integer()),
    tools: Type.Optional(Type.String()),
    range: Type.String(),
  },
  { 'x-data-source': 'resolved' },
);
export type ResolvedSource = Static<typeof ResolvedSource>;

const PerEval = Type.Object(
  {
    accuracy: Nullable(Type.Number()),
    avg_score: Nullable(Type.Number()),
    num_total: Nullable(Type.Integer()),
    num_errors: Nullable(Type.Integer()),
    num_failed: Nullable(Type.Integer()),
    num_passed: Nullable(Type.Integer()),
    num_scored: Nullable(Type.Integer()),
    num_missing: Nullable(Type.Integer()),
    avg_accuracy: Nullable(Type.Number()),
    break_reason: Nullable(Type.String()),
    expected_count: Nullable(Type.Integer()),
  },
  { additionalProperties: true },
);

const PerModel = Type.Object(
  {
    model: Nullable(FreeObject()),
    per_eval: Nullable(Type.Record(Type.String(), Nullable(PerEval))),
    avg_score: Nullable(Type.Number()),
    avg_accuracy: Nullable(Type.Number()),
    launch_index: Nullable(Type.Integer()),
    launch_call_id: Nullable(Type.String()),
    prompt: Type.Optional(ResolvedPrompt),
  },
  { additionalProperties: true },
);

export const RunResults = Type.Object(
  {
    overall: Nullable(
      Type.Object(
        { avg_score: Nullable(Type.Number()), avg_accuracy: Nullable(Type.Number()) },
        { additionalProperties: true },
      ),
    ),
    metadata: Nullable(FreeObject()),
    per_model: Nullable(Type.Array(PerModel)),
    launch_count: Nullable(Type.Integer()),
  },
  { additionalProperties: true },
);
export type RunResults = Static<typeof RunResults>;

export const Run = Type.Object({
  object: Type.Literal('evaluation.run'),
  id: Type.String(),
  name: Nullable(Type.String({ description: 'The name given at creation or by PATCH; null: none' })),
  status: Type.String({ description: 'queued, running, completed, error or cancelled' }),
  created_at: Type.String(),
  started_at: Nullable(Type.String()),
  finished_at: Nullable(Type.String()),
  error_at: Nullable(Type.String()),
  error: Nullable(
    Type.Object({ code: Type.String(), message: Type.String() }, { additionalProperties: true }),
  ),
  process_id: Nullable(Type.String()),
  evaluators: Nullable(Type.Array(Type.String())),
  container: Nullable(Type.String()),
  dataset_id: Nullable(Type.String()),
  sample: Nullable(ResolvedSource),
  ground_truth: Nullable(ResolvedSource),
  baseline: Nullable(ResolvedSource),
  results: Nullable(RunResults),
  metrics: Nullable(FreeObject()),
  config: Nullable(FreeObject()),
  spend: Nullable(Type.Number()),
  metadata: Nullable(FreeObject()),
  environment: Type.String(),
});
export type Run = Static<typeof Run>;

export const RunList = ListOf(Run);
export const ListRunsQuery = Type.Object({
  container: Type.Optional(Nullable(Type.String({ maxLength: 200 }))),
  name: Type.Optional(Nullable(Type.String({ maxLength: 200, description: 'Runs with exactly this name' }))),
  status: Type.Optional(Nullable(Type.Enum([...RUN_STATUSES], { description: 'Runs in this status' }))),
  ...PageQuery,
});
export const PatchRun = Type.Object(
  { name: Nullable(RunName) },
  { additionalProperties: false, description: 'A new name for the run; null removes it' },
);
export type PatchRun = Static<typeof PatchRun>;
export const RunIdParam = Type.Object({ run_id: Type.String({ minLength: 1, maxLength: 200 }) });

export const RunSample = Type.Object({
  object: Type.Literal('evaluation.sample'),
  launch_index: Type.Integer(),
  evaluator_id: Type.String(),
  position: Type.Integer(),
  item_id: Nullable(Type.String()),
  status: Type.String({ description: 'scored, error or missing' }),
  missing_reason: Nullable(
    Type.String({ description: 'Why a missing sample was not scored, e.g. "the sample has no output"' }),
  ),
  score: Nullable(Type.Number()),
  passed: Nullable(Type.Boolean()),
  reasoning: Nullable(Type.String()),
  error: Nullable(FreeObject()),
  logs: Nullable(Type.String()),
  input: Type.Unknown(),
  output: Type.Unknown(),
  expected: Type.Unknown(),
  baseline: Type.Unknown(),
  usage: Nullable(FreeObject()),
  cost: Type.Number(),
  latency_ms: Nullable(Type.Number()),
  extra: Nullable(FreeObject()),
  prompt_hash: Nullable(
    Type.String({
      description:
        'The hash of the prompt a model grader or judge asked with (null for evaluators that ask no model)',
    }),
  ),
  created_at: Type.String(),
});
export type RunSample = Static<typeof RunSample>;

export const SAMPLE_STATUSES = ['scored', 'error', 'missing'] as const;
export const ListSamplesQuery = Type.Object({
  launch: Type.Optional(Type.Integer({ minimum: 0 })),
  evaluator: Type.Optional(Type.String({ minLength: 1, maxLength: 300 })),
  passed: Type.Optional(Type.Boolean()),
  errored: Type.Optional(Type.Boolean()),
  status: Type.Optional(Type.Enum([...SAMPLE_STATUSES], { description: 'Samples in this status' })),
  ...PageQuery,
});
export const SampleList = ListOf(RunSample);

export const CompareQuery = Type.Object({
  baseline: Type.Optional(
    Type.String({
      minLength: 1,
      maxLength: 200,
      description: 'Id of the run to compare against (or `by`, to compare launches of this run)',
    }),
  ),
  by: Type.Optional(
    Type.Enum(['prompt_version', 'model'], {
      description:
        'Compare launches of this run: each prompt version with the reference version on the same model, or each model with the reference model on the same prompt version',
    }),
  ),
  reference: Type.Optional(
    Type.String({
      minLength: 1,
      maxLength: 300,
      description:
        'With `by`: the reference prompt version (`name@version`, `name@label`, `name`) or model; default: the run’s first',
    }),
  ),
  limit: Type.Optional(
    Type.Integer({
      minimum: 1,
      maximum: 100,
      default: 10,
      description: 'Regressions listed per evaluator and launch, 1..100',
    }),
  ),
});
export type CompareQuery = Static<typeof CompareQuery>;

const ComparedLaunch = Type.Object({
  index: Type.Integer(),
  model: Nullable(Type.String({ description: 'Slug of the generating model; null without generation' })),
  prompt: Type.Optional(ResolvedPrompt),
});

const ComparedEvaluator = Type.Object({ id: Type.String(), name: Type.String() });

const RegressionSide = Type.Object({
  position: Type.Integer(),
  output: Type.Unknown(),
  score: Type.Number(),
  reasoning: Nullable(Type.String()),
});

const Regression = Type.Object({
  item_id: Nullable(Type.String()),
  input: Type.Unknown(),
  expected: Type.Unknown(),
  difference: Type.Number({ description: 'Run score minus baseline score (negative)' }),
  run: RegressionSide,
  baseline: RegressionSide,
});

const EvaluatorComparison = Type.Object({
  evaluator: ComparedEvaluator,
  launch: ComparedLaunch,
  baseline_launch: ComparedLaunch,
  matched_by: Type.Enum(['item_id', 'position'], {
    description: 'item_id when the two sides share item ids, position otherwise',
  }),
  matched: Type.Integer({ minimum: 0, description: 'Positions scored in both runs' }),
  unmatched: Type.Object({
    run: Type.Integer({ minimum: 0, description: 'Positions of the run without a scored counterpart' }),
    baseline: Type.Integer({
      minimum: 0,
      description: 'Positions of the baseline without a scored counterpart',
    }),
  }),
  mean_difference: Nullable(Type.Number({ description: 'Mean of run score − baseline score' })),
  stdev: Nullable(Type.Number({ description: 'Sample standard deviation of the differences' })),
  confidence_interval: Nullable(
    Type.Object({ level: Type.Number(), lower: Type.Number(), upper: Type.Number() }),
  ),
  verdict: Type.Enum(['better', 'worse', 'inconclusive'], {
    description: 'better / worse when the interval lies above / below 0',
  }),
  wins: Type.Integer({ minimum: 0 }),
  ties: Type.Integer({ minimum: 0 }),
  losses: Type.Integer({ minimum: 0 }),
  pass_rate: Type.Object({
    positions: Type.Integer({ minimum: 0, description: 'Matched positions with a verdict on both sides' }),
    run: Nullable(Type.Number()),
    baseline: Nullable(Type.Number()),
    change: Nullable(Type.Number()),
  }),
  regressions: Type.Array(Regression, { description: 'Largest score drops first' }),
});

export const RunComparison = Type.Object({
  object: Type.Literal('evaluation.run_comparison'),
  run_id: Type.String(),
  baseline_id: Type.String(),
  by: Type.Enum(['run', 'prompt_version', 'model'], {
    description: 'run: two runs; prompt_version or model: launches of one run (baseline_id = run_id)',
  }),
  run_status: Type.String(),
  baseline_status: Type.String(),
  partial: Type.Boolean({ description: 'True when either run is not completed' }),
  summary: Type.Object({
    comparisons: Type.Integer({ minimum: 0 }),
    matched: Type.Integer({ minimum: 0 }),
    wins: Type.Integer({ minimum: 0 }),
    ties: Type.Integer({ minimum: 0 }),
    losses: Type.Integer({ minimum: 0 }),
    mean_difference: Nullable(Type.Number({ description: 'Mean of the comparisons’ mean differences' })),
    pass_rate_change: Nullable(Type.Number({ description: 'Mean of the comparisons’ pass-rate changes' })),
    better: Type.Integer({ minimum: 0 }),
    worse: Type.Integer({ minimum: 0 }),
    inconclusive: Type.Integer({ minimum: 0 }),
    comparisons_better: Type.Integer({
      minimum: 0,
      description: 'Comparisons (evaluator × launch) whose 95% interval lies above 0 (= better)',
    }),
    comparisons_worse: Type.Integer({
      minimum: 0,
      description: 'Comparisons whose 95% interval lies below 0 (= worse)',
    }),
    positions_better: Type.Integer({
      minimum: 0,
      description: 'Matched positions scored higher than in the baseline (= wins)',
    }),
    positions_worse: Type.Integer({
      minimum: 0,
      description: 'Matched positions scored lower than in the baseline (= losses)',
    }),
  }),
  comparisons: Type.Array(EvaluatorComparison),
  unmatched_evaluators: Type.Object({
    run: Type.Array(ComparedEvaluator),
    baseline: Type.Array(ComparedEvaluator),
  }),
  unmatched_launches: Type.Object({
    run: Type.Array(ComparedLaunch),
    baseline: Type.Array(ComparedLaunch),
  }),
});
export type RunComparison = Static<typeof RunComparison>;
export type EvaluatorComparison = Static<typeof EvaluatorComparison>;
