import { type Static, Type } from 'typebox';
import { FreeObject, ListOf, Nullable, PageQuery } from '../http/schemas.js';

export const EVALUATOR_TYPES = ['judge', 'code'] as const;
export const EVALUATOR_MODES = ['pointwise', 'pairwise'] as const;
export const JUDGE_APIS = ['chat_completions', 'messages'] as const;

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
  name: Type.Optional(Nullable(Name)),
  description: Type.Optional(Nullable(Type.String({ maxLength: 10_000 }))),
  api: Type.Optional(Nullable(Api)),
  metadata: Type.Optional(FreeObject()),
  inference_parameters: Type.Optional(
    FreeObject('Passed on every judge call (temperature, max_tokens, seed, …)'),
  ),
};

export const CreateEvaluator = Type.Object(
  {
    type: Type.Enum([...EVALUATOR_TYPES], { description: 'judge or code' }),
    // Document-only default (see src/http/openapi-document.ts): the service applies it.
    mode: Type.Optional(
      Type.Enum([...EVALUATOR_MODES], {
        description: 'pointwise (default) or pairwise',
        'x-default': 'pointwise',
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

export const Evaluator = Type.Union([JudgeEvaluator, CodeEvaluator]);
export type Evaluator = Static<typeof Evaluator>;

export const EvaluatorList = ListOf(Evaluator);
export const ListEvaluatorsQuery = Type.Object({
  container: Type.Optional(Nullable(Type.String({ maxLength: 200, description: 'Container id or label' }))),
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
