/**
 * Evaluators of the grader types: their fields are the grader's (OpenAI's shape), stored as one
 * grader definition; the engine scores them with the graders' one implementation.
 */
import type { EvaluatorTable } from '../db/schema.js';
import type { SubGrader } from '../scoring/graders/schemas.js';
import { embeddingModelOf } from '../scoring/graders/text.js';
import { graderIssues } from '../scoring/graders/validate.js';
import type { ValidationIssue } from '../shared/errors.js';
import { parseJson } from '../shared/json.js';
import { GRADER_EVALUATOR_TYPES, type GraderEvaluator, type GraderEvaluatorType } from './schemas.js';

export const GRADER_FIELDS = [
  'input',
  'reference',
  'operation',
  'evaluation_metric',
  'embedding_model',
  'range',
  'sampling_params',
  'labels',
  'passing_labels',
] as const;

/** The fields each grader type takes (`model` is shared with judges). */
const FIELDS_OF: Record<GraderEvaluatorType, readonly string[]> = {
  string_check: ['input', 'reference', 'operation'],
  text_similarity: ['input', 'reference', 'evaluation_metric', 'embedding_model'],
  score_model: ['model', 'input', 'range', 'sampling_params'],
  label_model: ['model', 'input', 'labels', 'passing_labels'],
};

export function isGraderType(type: string): type is GraderEvaluatorType {
  return (GRADER_EVALUATOR_TYPES as readonly string[]).includes(type);
}

export function graderOfRow(row: Pick<EvaluatorTable, 'grader'>): SubGrader | null {
  return parseJson<SubGrader | null>(row.grader, null);
}

/**
 * The grader a row and a request's fields make (the request's fields over the stored grader's), and
 * every problem with it, located in the request body.
 */
export function buildGrader(
  type: GraderEvaluatorType,
  name: string,
  stored: SubGrader | null,
  given: Record<string, unknown>,
  passThreshold: number | null,
): { grader: SubGrader; issues: ValidationIssue[] } {
  const def: Record<string, unknown> = { type, name };
  const previous = (stored ?? {}) as Record<string, unknown>;
  for (const field of FIELDS_OF[type]) {
    const value = given[field] !== undefined ? given[field] : previous[field];
    if (value !== undefined && value !== null) def[field] = value;
  }
  const issues = graderIssues(def, ['body'], [type]).map((i) =>
    // The grader's name is the evaluator's: say so where it is wrong.
    i.loc[1] === 'name' ? { ...i, loc: ['body', 'name'] } : i,
  );
  for (const field of GRADER_FIELDS) {
    if (!FIELDS_OF[type].includes(field) && given[field] !== undefined && given[field] !== null) {
      issues.push({
        loc: ['body', field],
        msg: `Not allowed for ${type} evaluators`,
        type: 'extra_forbidden',
      });
    }
  }
  if (passThreshold !== null && (type === 'string_check' || type === 'label_model')) {
    issues.push({
      loc: ['body', 'pass_threshold'],
      msg: `Not allowed for ${type} evaluators: ${type === 'string_check' ? 'a match passes' : 'passing_labels decide'}`,
      type: 'extra_forbidden',
    });
  }
  return { grader: def as SubGrader, issues };
}

type Common = Omit<
  GraderEvaluator,
  | 'object'
  | 'model'
  | 'input'
  | 'reference'
  | 'operation'
  | 'evaluation_metric'
  | 'embedding_model'
  | 'range'
  | 'sampling_params'
  | 'labels'
  | 'passing_labels'
>;

export function toGraderEvaluator(
  type: GraderEvaluatorType,
  common: Common,
  grader: SubGrader | null,
): GraderEvaluator {
  const g = (grader ?? {}) as Record<string, unknown>;
  const field = <T>(name: string): T | null => (g[name] === undefined ? null : (g[name] as T));
  return {
    object: `evaluator.${type}`,
    ...common,
    model: field<string>('model'),
    input: (g.input as GraderEvaluator['input'] | undefined) ?? '',
    reference: field<string>('reference'),
    operation: field<string>('operation'),
    evaluation_metric: field<string>('evaluation_metric'),
    embedding_model:
      grader?.type === 'text_similarity' && grader.evaluation_metric === 'cosine'
        ? embeddingModelOf(grader)
        : field<string>('embedding_model'),
    range: grader?.type === 'score_model' ? (grader.range ?? [0, 1]) : null,
    sampling_params: field<GraderEvaluator['sampling_params']>('sampling_params'),
    labels: field<string[]>('labels'),
    passing_labels: field<string[]>('passing_labels'),
  };
}
