import { type Static, Type } from 'typebox';
import { FreeObject, ListOf, Nullable, PageQuery } from '../http/schemas.js';
import {
  ModelInput,
  SamplingParams,
  STRING_CHECK_OPERATIONS,
  TEXT_SIMILARITY_METRICS,
} from '../scoring/graders/schemas.js';
import { ARGUMENT_MODES, MATCH_MODES } from '../scoring/trajectory/match.js';
import {
  EVALUATOR_TYPES,
  GRADER_EVALUATOR_TYPES,
  TRAJECTORY_EVALUATOR_TYPES,
} from '../shared/grader-types.js';
import { Scale } from '../shared/scale.js';
import type { JudgeApi } from '../shared/wire-protocol.js';

/** Evaluator types that are OpenAI-style graders (see docs/graders.md): one list, in shared/grader-types.ts. */
export { EVALUATOR_TYPES, GRADER_EVALUATOR_TYPES, type GraderEvaluatorType } from '../shared/grader-types.js';
export const EVALUATOR_MODES = ['pointwise', 'pairwise'] as const;
export const JUDGE_APIS = ['chat_completions', 'messages'] as const satisfies readonly JudgeApi[];

const Name = Type.String({
  minLength: 1,
  maxLength: 200,
  pattern: '^(?!evl_)\\S(.*\\S)?$',
  description: 'Unique in the project; defaults to the id. Must not start with evl_ or with/end in spaces',
});
const Mode = Type.Enum([...EVALUATOR_MODES], { description: 'pointwise (default) or pairwise' });
const Api = Type.Enum([...JUDGE_APIS], {
  description: "Wire API for the judge model; null lets the model's provider decide",
});
const Requirements = Type.Array(Type.String({ minLength: 1, maxLength: 500 }), { maxItems: 100 });

const Labels = Type.Array(Type.String({ minLength: 1, maxLength: 200 }), { maxItems: 100 });

/** The grader types' own fields, as in OpenAI's grader objects (docs/graders.md). */
const graderFields = {
  input: Type.Optional(
    Type.Union(
      [Type.String({ maxLength: 200_000 }), Type.Array(ModelInput, { minItems: 1, maxItems: 100 })],
      {
        description:
          'string_check / text_similarity: the text template; score_model / label_model: the messages',
      },
    ),
  ),
  reference: Type.Optional(Type.String({ maxLength: 200_000, description: 'The reference text template' })),
  operation: Type.Optional(
    Type.Enum([...STRING_CHECK_OPERATIONS], { description: 'string_check: eq, ne, like, ilike' }),
  ),
  evaluation_metric: Type.Optional(
    Type.Enum([...TEXT_SIMILARITY_METRICS], { description: 'text_similarity metric' }),
  ),
  embedding_model: Type.Optional(
    Type.String({
      minLength: 1,
      maxLength: 300,
      description: 'text_similarity cosine: the embeddings model',
    }),
  ),
  range: Type.Optional(
    Type.Array(Type.Number(), { minItems: 2, maxItems: 2, description: 'score_model [min, max]' }),
  ),
  sampling_params: Type.Optional(SamplingParams),
  labels: Type.Optional(Labels),
  passing_labels: Type.Optional(Labels),
};

/** The trajectory graders' fields (docs/agents.md): tool_call_match and trajectory_length. */
const trajectoryFields = {
  match_mode: Type.Optional(
    Type.Enum([...MATCH_MODES], {
      description: 'tool_call_match: exact, in_order (default), any_order, subset or superset',
    }),
  ),
  arguments_match: Type.Optional(
    Type.Enum([...ARGUMENT_MODES], {
      description: 'tool_call_match: how arguments compare: exact (default), subset, schema or ignore',
    }),
  ),
  expected_field: Type.Optional(
    Type.String({
      minLength: 1,
      maxLength: 200,
      description:
        'tool_call_match: the field (or dotted path) of the ground-truth row, else of the sample row, that lists the expected calls; default expected_tool_calls',
    }),
  ),
  tool_schemas: Type.Optional(
    Nullable(
      FreeObject(
        "tool_call_match with arguments_match 'schema': tool name → JSON schema its arguments must satisfy",
      ),
    ),
  ),
  length_of: Type.Optional(
    Type.Enum(['turns', 'tool_calls'], {
      description: 'trajectory_length: what is counted (default tool_calls)',
    }),
  ),
  min_length: Type.Optional(
    Nullable(Type.Integer({ minimum: 0, description: 'trajectory_length: inclusive' })),
  ),
  max_length: Type.Optional(
    Nullable(Type.Integer({ minimum: 0, description: 'trajectory_length: inclusive' })),
  ),
};

const writable = {
  container: Type.Optional(
    Nullable(Type.String({ minLength: 1, maxLength: 200, description: 'Container label or id' })),
  ),
  model: Type.Optional(
    Nullable(Type.String({ minLength: 1, maxLength: 300, description: 'Judge model slug' })),
  ),
  prompt: Type.Optional(
    Nullable(Type.String({ minLength: 1, maxLength: 200_000, description: 'Judge prompt template' })),
  ),
  source: Type.Optional(
    Nullable(
      Type.String({ minLength: 1, maxLength: 500_000, description: 'Python source of a code evaluator' }),
    ),
  ),
  requirements: Type.Optional(Nullable(Requirements)),
  pass_threshold: Type.Optional(Nullable(Type.Number())),
  scale: Type.Optional(Nullable(Scale)),
  name: Type.Optional(Nullable(Name)),
  description: Type.Optional(Nullable(Type.String({ maxLength: 10_000 }))),
  api: Type.Optional(Nullable(Api)),
  metadata: Type.Optional(FreeObject()),
  inference_parameters: Type.Optional(
    FreeObject('Passed on every judge call (temperature, max_tokens, seed, …)'),
  ),
  ...graderFields,
  ...trajectoryFields,
};

export const CreateEvaluator = Type.Object(
  {
    type: Type.Enum([...EVALUATOR_TYPES], {
      description:
        'judge, code, a grader type (string_check, text_similarity, score_model, label_model) or a trajectory grader (tool_call_match, trajectory_length)',
    }),
    // Document-only default (see src/http/openapi-document.ts): the service applies it.
    mode: Type.Optional(
      Type.Enum([...EVALUATOR_MODES], {
        description: 'pointwise (default) or pairwise',
        'x-default': 'pointwise',
      }),
    ),
    template: Type.Optional(
      Type.String({
        minLength: 1,
        maxLength: 200,
        description:
          'A judge catalog template (`faithfulness@1`, or a name for its latest version): fills prompt, scale and pass_threshold unless given',
      }),
    ),
    ...writable,
  },
  { additionalProperties: false },
);
export type CreateEvaluator = Static<typeof CreateEvaluator>;

export const PatchEvaluator = Type.Object(
  { mode: Type.Optional(Nullable(Mode)), ...writable },
  { additionalProperties: false },
);
export type PatchEvaluator = Static<typeof PatchEvaluator>;

const common = {
  project_id: Type.String(),
  container_id: Nullable(Type.String()),
  container: Nullable(Type.String({ description: 'Container label' })),
  id: Type.String(),
  name: Type.String(),
  description: Type.String(),
  created_at: Type.String(),
  updated_at: Type.String(),
  metadata: FreeObject(),
  pass_threshold: Nullable(Type.Number()),
  mode: Type.String(),
  scale: Type.Optional(Scale),
  template: Type.Optional(
    Nullable(
      Type.String({ description: 'The catalog template it was made from, until its prompt is edited' }),
    ),
  ),
};

export const JudgeEvaluator = Type.Object({
  object: Type.Literal('evaluator.judge'),
  ...common,
  api: Nullable(Type.String()),
  model: Type.String(),
  prompt: Type.String(),
  inference_parameters: FreeObject(),
});
export type JudgeEvaluator = Static<typeof JudgeEvaluator>;

export const CodeEvaluator = Type.Object({
  object: Type.Literal('evaluator.code'),
  ...common,
  source: Type.String(),
  requirements: Type.Array(Type.String()),
});
export type CodeEvaluator = Static<typeof CodeEvaluator>;

export const GraderEvaluator = Type.Object({
  object: Type.Enum(GRADER_EVALUATOR_TYPES.map((t) => `evaluator.${t}` as const)),
  ...common,
  /** The grader's fields; those of other grader types are null. */
  model: Nullable(Type.String()),
  input: Type.Union([Type.String(), Type.Array(ModelInput)]),
  reference: Nullable(Type.String()),
  operation: Nullable(Type.String()),
  evaluation_metric: Nullable(Type.String()),
  embedding_model: Nullable(Type.String()),
  range: Nullable(Type.Array(Type.Number())),
  sampling_params: Nullable(SamplingParams),
  labels: Nullable(Type.Array(Type.String())),
  passing_labels: Nullable(Type.Array(Type.String())),
});
export type GraderEvaluator = Static<typeof GraderEvaluator>;

export const TrajectoryEvaluator = Type.Object({
  object: Type.Enum(TRAJECTORY_EVALUATOR_TYPES.map((t) => `evaluator.${t}` as const)),
  ...common,
  /** tool_call_match's fields (null for trajectory_length). */
  match_mode: Nullable(Type.String()),
  arguments_match: Nullable(Type.String()),
  expected_field: Nullable(Type.String()),
  tool_schemas: Nullable(FreeObject()),
  /** trajectory_length's fields (null for tool_call_match). */
  length_of: Nullable(Type.String()),
  min_length: Nullable(Type.Integer()),
  max_length: Nullable(Type.Integer()),
});
export type TrajectoryEvaluator = Static<typeof TrajectoryEvaluator>;

export const Evaluator = Type.Union([JudgeEvaluator, CodeEvaluator, GraderEvaluator, TrajectoryEvaluator]);
export type Evaluator = Static<typeof Evaluator>;

export const EvaluatorList = ListOf(Evaluator);
export const ListEvaluatorsQuery = Type.Object({
  container: Type.Optional(Nullable(Type.String({ maxLength: 200, description: 'Container id or label' }))),
  include_project_wide: Type.Optional(
    Type.Boolean({
      description:
        "With container: also list the project-wide evaluators (no container), which every container's runs may use",
    }),
  ),
  ...PageQuery,
});
export const EvaluatorRefParam = Type.Object({
  evaluator: Type.String({ minLength: 1, maxLength: 300, description: 'Evaluator id or name' }),
});
export const EvaluatorIdParam = Type.Object({
  evaluator_id: Type.String({ minLength: 1, maxLength: 300, description: 'Evaluator id' }),
});
export const EvaluatorDeleted = Type.Object({
  object: Type.Literal('evaluator'),
  id: Type.String(),
  deleted: Type.Literal(true),
});
