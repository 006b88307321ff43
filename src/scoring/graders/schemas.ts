/**
 * The graders' definitions in the shapes of OpenAI's SDKs (`openai` npm `resources/graders`), used by
 * `/v1/fine_tuning/alpha/graders/*` and by evaluators of the grader types. Fields the SDK marks optional
 * are optional here; `pass_threshold` is accepted where OpenAI's eval criteria carry it.
 */
import { type Static, type TSchema, Type } from 'typebox';

export const TEXT_SIMILARITY_METRICS = [
  'cosine',
  'fuzzy_match',
  'bleu',
  'gleu',
  'meteor',
  'rouge_1',
  'rouge_2',
  'rouge_3',
  'rouge_4',
  'rouge_5',
  'rouge_l',
] as const;
export type TextSimilarityMetric = (typeof TEXT_SIMILARITY_METRICS)[number];
export const STRING_CHECK_OPERATIONS = ['eq', 'ne', 'like', 'ilike'] as const;

import { GRADER_TYPES, type GraderType } from '../../shared/grader-types.js';

export { GRADER_TYPES, type GraderType };

const Name = Type.String({ minLength: 1, maxLength: 200, description: 'The grader name' });
const Template = (description: string) => Type.String({ maxLength: 200_000, description });
const Threshold = Type.Optional(Type.Number({ description: 'Score at or above which an item passes' }));

export const StringCheckGrader = Type.Object(
  {
    type: Type.Literal('string_check'),
    name: Name,
    input: Template('The input text; may include template strings'),
    reference: Template('The reference text; may include template strings'),
    operation: Type.Enum([...STRING_CHECK_OPERATIONS], { description: 'eq, ne, like or ilike' }),
  },
  { additionalProperties: false },
);
export type StringCheckGrader = Static<typeof StringCheckGrader>;

export const TextSimilarityGrader = Type.Object(
  {
    type: Type.Literal('text_similarity'),
    name: Name,
    input: Template('The text being graded'),
    reference: Template('The text being graded against'),
    evaluation_metric: Type.Enum([...TEXT_SIMILARITY_METRICS]),
    pass_threshold: Threshold,
    embedding_model: Type.Optional(
      Type.String({
        minLength: 1,
        maxLength: 300,
        description:
          'Embeddings model for cosine (Evalgate extension; default openai/text-embedding-3-small)',
      }),
    ),
  },
  { additionalProperties: false },
);
export type TextSimilarityGrader = Static<typeof TextSimilarityGrader>;

const TextPart = Type.Object(
  { type: Type.Enum(['input_text', 'output_text']), text: Type.String({ maxLength: 200_000 }) },
  { additionalProperties: false },
);
const ImagePart = Type.Object(
  {
    type: Type.Literal('input_image'),
    image_url: Type.String({ maxLength: 2_000_000 }),
    detail: Type.Optional(Type.String({ maxLength: 20 })),
  },
  { additionalProperties: false },
);
const AudioPart = Type.Object(
  {
    type: Type.Literal('input_audio'),
    input_audio: Type.Object(
      { data: Type.String(), format: Type.Enum(['mp3', 'wav']) },
      { additionalProperties: false },
    ),
  },
  { additionalProperties: false },
);
const Part = Type.Union([TextPart, ImagePart, AudioPart]);
export const ModelInput = Type.Object(
  {
    role: Type.Enum(['user', 'assistant', 'system', 'developer']),
    content: Type.Union([
      Type.String({ maxLength: 200_000 }),
      Part,
      Type.Array(Type.Union([Type.String({ maxLength: 200_000 }), Part]), { maxItems: 100 }),
    ]),
    type: Type.Optional(Type.Literal('message')),
  },
  { additionalProperties: false },
);
export type ModelInput = Static<typeof ModelInput>;
const Inputs = Type.Array(ModelInput, { minItems: 1, maxItems: 100 });
const Model = Type.String({ minLength: 1, maxLength: 300, description: 'Model label, slug or OpenAI name' });

const Optional = <T extends TSchema>(schema: T) => Type.Optional(Type.Union([schema, Type.Null()]));
export const SamplingParams = Type.Object(
  {
    max_completions_tokens: Optional(Type.Integer({ minimum: 1 })),
    max_completion_tokens: Optional(Type.Integer({ minimum: 1 })),
    reasoning_effort: Optional(Type.Enum(['none', 'minimal', 'low', 'medium', 'high', 'xhigh'])),
    seed: Optional(Type.Integer()),
    temperature: Optional(Type.Number({ minimum: 0, maximum: 2 })),
    top_p: Optional(Type.Number({ minimum: 0, maximum: 1 })),
  },
  { additionalProperties: false },
);
export type SamplingParams = Static<typeof SamplingParams>;

export const ScoreModelGrader = Type.Object(
  {
    type: Type.Literal('score_model'),
    name: Name,
    model: Model,
    input: Inputs,
    range: Type.Optional(Type.Array(Type.Number(), { minItems: 2, maxItems: 2, description: '[min, max]' })),
    sampling_params: Type.Optional(SamplingParams),
    pass_threshold: Threshold,
  },
  { additionalProperties: false },
);
export type ScoreModelGrader = Static<typeof ScoreModelGrader>;

const Labels = Type.Array(Type.String({ minLength: 1, maxLength: 200 }), { maxItems: 100 });
export const LabelModelGrader = Type.Object(
  {
    type: Type.Literal('label_model'),
    name: Name,
    model: Model,
    input: Inputs,
    labels: Labels,
    passing_labels: Labels,
  },
  { additionalProperties: false },
);
export type LabelModelGrader = Static<typeof LabelModelGrader>;

export const PythonGrader = Type.Object(
  {
    type: Type.Literal('python'),
    name: Name,
    source: Type.String({ minLength: 1, maxLength: 500_000, description: 'Defines grade(sample, item)' }),
    image_tag: Type.Optional(Type.String({ maxLength: 200, description: 'Accepted and ignored' })),
    pass_threshold: Threshold,
  },
  { additionalProperties: false },
);
export type PythonGrader = Static<typeof PythonGrader>;

/** A grader a multi grader combines (no nested multi). */
export const SubGrader = Type.Union([
  StringCheckGrader,
  TextSimilarityGrader,
  PythonGrader,
  ScoreModelGrader,
  LabelModelGrader,
]);
export type SubGrader = Static<typeof SubGrader>;

export const MultiGrader = Type.Object(
  {
    type: Type.Literal('multi'),
    name: Name,
    calculate_output: Type.String({
      minLength: 1,
      maxLength: 2000,
      description: 'Formula over sub-grader names',
    }),
    // The SDK declares one grader; a map of name → grader (OpenAI's earlier shape) is accepted too.
    graders: Type.Union([SubGrader, Type.Record(Type.String(), SubGrader)]),
  },
  { additionalProperties: false },
);
export type MultiGrader = Static<typeof MultiGrader>;

export const Grader = Type.Union([
  StringCheckGrader,
  TextSimilarityGrader,
  ScoreModelGrader,
  LabelModelGrader,
  PythonGrader,
  MultiGrader,
]);
export type Grader = Static<typeof Grader>;

export const SCHEMA_OF: Record<GraderType, TSchema> = {
  string_check: StringCheckGrader,
  text_similarity: TextSimilarityGrader,
  score_model: ScoreModelGrader,
  label_model: LabelModelGrader,
  python: PythonGrader,
  multi: MultiGrader,
};
