/**
 * The grader types, in one list: every other list of them (the evaluator types, an eval's testing
 * criteria, the database's `evaluators.type` union) is derived from it, so the compiler connects them.
 * A new grader type is added here, with its schema (scoring/graders/schemas.ts) and its grading.
 */
export const GRADER_TYPES = [
  'string_check',
  'text_similarity',
  'score_model',
  'label_model',
  'python',
  'multi',
] as const;
export type GraderType = (typeof GRADER_TYPES)[number];

/** `list` without `excluded`, typed as what is left (the order kept). */
function without<T extends string, E extends T>(list: readonly T[], excluded: readonly E[]): Exclude<T, E>[] {
  return list.filter((t): t is Exclude<T, E> => !(excluded as readonly T[]).includes(t));
}

/** The grader types an evaluator may be: `python` runs only in OpenAI eval runs, `multi` only in graders/run. */
export const GRADER_EVALUATOR_TYPES: readonly Exclude<GraderType, 'python' | 'multi'>[] = without(
  GRADER_TYPES,
  ['python', 'multi'] as const,
);
export type GraderEvaluatorType = (typeof GRADER_EVALUATOR_TYPES)[number];

/** The grader types an eval's testing criteria may be (OpenAI's list; `multi` is for graders/run only). */
export const CRITERIA_TYPES: readonly Exclude<GraderType, 'multi'>[] = without(GRADER_TYPES, [
  'multi',
] as const);
export type CriteriaType = (typeof CRITERIA_TYPES)[number];

/** The trajectory grader types (scoring/trajectory/spec.ts): a conversation's tool calls or length. */
export const TRAJECTORY_EVALUATOR_TYPES = ['tool_call_match', 'trajectory_length'] as const;
export type TrajectoryEvaluatorType = (typeof TRAJECTORY_EVALUATOR_TYPES)[number];

/** Every evaluator type: the two of the engine's own, then the grader types, then the trajectory graders. */
export const EVALUATOR_TYPES = [
  'judge',
  'code',
  ...GRADER_EVALUATOR_TYPES,
  ...TRAJECTORY_EVALUATOR_TYPES,
] as const;
export type EvaluatorType = 'judge' | 'code' | GraderEvaluatorType | TrajectoryEvaluatorType;
