import { type Static, Type } from 'typebox';
import { FreeObject, ListOf, Nullable, PageQuery } from '../http/schemas.js';

export const RUN_STATUSES = ['queued', 'running', 'completed', 'error', 'cancelled'] as const;
export type RunStatus = (typeof RUN_STATUSES)[number];
export const TERMINAL: readonly RunStatus[] = ['completed', 'error', 'cancelled'];

export const RANGE_PATTERN = '^\\d+:\\d+$';

/**
 * A data source, discriminated by `type` (default `generate`). The three variants share one object
 * schema so every problem is reported at its own field; the service enforces which fields each variant
 * takes (unknown ones are rejected, as in the contract).
 */
export const DataSource = Type.Object(
  {
    type: Type.Optional(Type.Enum(['dataset', 'container', 'generate'], { default: 'generate' })),
    dataset: Type.Optional(
      Type.String({ minLength: 1, maxLength: 200, description: 'type=dataset: dataset id or label' }),
    ),
    container: Type.Optional(
      Type.String({ minLength: 1, maxLength: 200, description: 'type=container: container id or label' }),
    ),
    models: Type.Optional(
      Type.Array(Type.String({ minLength: 1, maxLength: 300 }), {
        minItems: 1,
        maxItems: 32,
        description: 'type=generate: model ids or slugs',
      }),
    ),
    range: Type.Optional(
      Nullable(
        Type.String({
          pattern: RANGE_PATTERN,
          description: 'start:end, 0-based, end exclusive; default 0:100',
        }),
      ),
    ),
  },
  {
    additionalProperties: false,
    description: 'Data source: dataset, container task logs, or generated completions',
  },
);
export type DataSource = Static<typeof DataSource>;

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
    metadata: Type.Optional(Nullable(FreeObject())),
    environment: Type.Optional(Nullable(Type.String({ minLength: 1, maxLength: 100 }))),
  },
  { additionalProperties: false },
);
export type CreateRun = Static<typeof CreateRun>;

/** A side after resolution: its type, the referenced resource's id, and the range in force. */
export const ResolvedSource = Type.Object({
  type: Type.String(),
  dataset: Type.Optional(Type.String()),
  container: Type.Optional(Type.String()),
  models: Type.Optional(Type.Array(Type.String())),
  range: Type.String(),
});
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
  status: Type.Optional(Nullable(Type.String({ maxLength: 50 }))),
  ...PageQuery,
});
export const RunIdParam = Type.Object({ run_id: Type.String({ minLength: 1, maxLength: 200 }) });

export const RunSample = Type.Object({
  object: Type.Literal('evaluation.sample'),
  launch_index: Type.Integer(),
  evaluator_id: Type.String(),
  position: Type.Integer(),
  item_id: Nullable(Type.String()),
  status: Type.String({ description: 'scored, error or missing' }),
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
  created_at: Type.String(),
});
export type RunSample = Static<typeof RunSample>;

export const ListSamplesQuery = Type.Object({
  launch: Type.Optional(Type.Integer({ minimum: 0 })),
  evaluator: Type.Optional(Type.String({ minLength: 1, maxLength: 300 })),
  passed: Type.Optional(Type.Boolean()),
  errored: Type.Optional(Type.Boolean()),
  ...PageQuery,
});
export const SampleList = ListOf(RunSample);
