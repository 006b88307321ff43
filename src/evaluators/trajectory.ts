/**
 * Evaluators of the trajectory grader types (tool_call_match, trajectory_length): their configuration is
 * stored as one JSON object in the `grader` column, validated and shown with their own fields.
 */
import type { EvaluatorTable } from '../db/schema.js';
import {
  buildTrajectoryConfig,
  isTrajectoryType,
  TRAJECTORY_FIELDS,
  type TrajectoryConfig,
  type TrajectoryType,
  trajectoryConfigOf,
} from '../scoring/trajectory/spec.js';
import type { ValidationIssue } from '../shared/errors.js';
import type { TrajectoryEvaluator } from './schemas.js';

export { isTrajectoryType, TRAJECTORY_FIELDS };

export function trajectoryOfRow(row: Pick<EvaluatorTable, 'type' | 'grader'>): TrajectoryConfig | null {
  return trajectoryConfigOf(row.type, row.grader);
}

/** Checks a trajectory evaluator's row and request; stores its configuration in `row.grader`. */
export function validateTrajectory(
  row: EvaluatorTable,
  type: TrajectoryType,
  given: Record<string, unknown>,
): ValidationIssue[] {
  const built = buildTrajectoryConfig(type, trajectoryOfRow(row), given);
  const issues = [...built.issues];
  const forbidden = [
    'model',
    'prompt',
    'api',
    'source',
    'requirements',
    'input',
    'reference',
    'operation',
    'evaluation_metric',
    'embedding_model',
    'range',
    'sampling_params',
    'labels',
    'passing_labels',
  ];
  for (const f of forbidden) {
    if (given[f] !== undefined && given[f] !== null)
      issues.push({ loc: ['body', f], msg: `Not allowed for ${type} evaluators`, type: 'extra_forbidden' });
  }
  const params = given.inference_parameters;
  if (params && typeof params === 'object' && Object.keys(params).length > 0)
    issues.push({
      loc: ['body', 'inference_parameters'],
      msg: `Not allowed for ${type} evaluators`,
      type: 'extra_forbidden',
    });
  if (row.mode !== 'pointwise')
    issues.push({ loc: ['body', 'mode'], msg: 'Trajectory evaluators are pointwise', type: 'value_error' });
  if (row.pass_threshold !== null)
    issues.push({
      loc: ['body', 'pass_threshold'],
      msg: `Not allowed for ${type} evaluators: the trajectory passes or not (score 1 or 0)`,
      type: 'extra_forbidden',
    });
  row.grader = JSON.stringify(built.config);
  row.model = null;
  return issues;
}

type Common = Omit<
  TrajectoryEvaluator,
  | 'object'
  | 'match_mode'
  | 'arguments_match'
  | 'expected_field'
  | 'tool_schemas'
  | 'length_of'
  | 'min_length'
  | 'max_length'
>;

export function toTrajectoryEvaluator(
  type: TrajectoryType,
  common: Common,
  config: TrajectoryConfig | null,
): TrajectoryEvaluator {
  const match = config?.type === 'tool_call_match' ? config : null;
  const length = config?.type === 'trajectory_length' ? config : null;
  return {
    object: `evaluator.${type}`,
    ...common,
    match_mode: match?.match_mode ?? null,
    arguments_match: match?.arguments_match ?? null,
    expected_field: match?.expected_field ?? null,
    tool_schemas: match?.tool_schemas ?? null,
    length_of: length?.length_of ?? null,
    min_length: length?.min_length ?? null,
    max_length: length?.max_length ?? null,
  };
}
