/**
 * The scorer registry: evaluator kind → scorer kind. A kind is the evaluator's grader type when it has
 * a grader (OpenAI-style graders, python graders of eval runs), else its type (judge, code). A new
 * scorer is one file in this folder plus its line below; an unknown kind is an error, never a fallback.
 */

import { type ScoreInput, type Scorer, ScorerSetupError } from '../../scoring/types.js';
import type { CriteriaType, TrajectoryEvaluatorType } from '../../shared/grader-types.js';
import type { EvaluatorSnapshot, RunPlan } from '../plan.js';
import { isBlank } from '../positions.js';
import { codeScorer } from './code.js';
import { graderScorer, pythonGraderKind } from './graders.js';
import { judgeScorer } from './judge.js';
import type { ScorerKind, ScorerPorts } from './kind.js';
import { trajectoryScorer } from './trajectory.js';

export type { Needs, ScorerKind, ScorerPorts } from './kind.js';

/** The kinds every evaluator of this version may be: the compiler asks for one scorer per grader type. */
const BUILT_IN: Record<'judge' | 'code' | CriteriaType | TrajectoryEvaluatorType, ScorerKind> = {
  judge: judgeScorer,
  code: codeScorer,
  string_check: graderScorer,
  text_similarity: graderScorer,
  score_model: graderScorer,
  label_model: graderScorer,
  python: pythonGraderKind,
  tool_call_match: trajectoryScorer,
  trajectory_length: trajectoryScorer,
};

const kinds = new Map<string, ScorerKind>(Object.entries(BUILT_IN));

/** Registers (or replaces) the scorer of a kind. */
export function registerScorer(kind: string, scorer: ScorerKind): void {
  kinds.set(kind, scorer);
}

/** The evaluator's kind: its grader's type when it has a grader, else its own type. */
export function kindOf(ev: Pick<EvaluatorSnapshot, 'type' | 'grader'>): string {
  return ev.grader?.type ?? ev.type;
}

/** The scorer kind of an evaluator; an unknown kind is a setup error of the run. */
export function scorerKindOf(ev: Pick<EvaluatorSnapshot, 'type' | 'grader'>): ScorerKind {
  const kind = kinds.get(kindOf(ev));
  if (!kind) {
    throw new ScorerSetupError('unknown_evaluator_type', `No scorer is registered for '${kindOf(ev)}'`);
  }
  return kind;
}

/**
 * The scorer of an evaluator for one launch. A kind that runs code is refused on a worker without a
 * sandbox (`sandbox_unavailable`: the evaluator's positions fail, the run's other evaluators go on).
 */
export async function createScorer(ev: EvaluatorSnapshot, ports: ScorerPorts): Promise<Scorer> {
  const kind = scorerKindOf(ev);
  if (kind.sandboxed !== undefined) {
    const sandbox = await ports.sandbox();
    if (!sandbox.available) {
      throw new ScorerSetupError(
        'sandbox_unavailable',
        `${kind.sandboxed} cannot run on this worker: ${sandbox.reason ?? 'no sandbox'}`,
      );
    }
  }
  return kind.create(ev, ports);
}

/** Why a position cannot be scored by `ev` (it is then `missing`), or null when it can. */
export function missingReason(ev: EvaluatorSnapshot, input: ScoreInput): string | null {
  if (input.sample === null) return 'no sample at this position';
  // An ingested call whose emitter recorded no messages: nothing to judge, rather than an empty answer.
  if (input.sample.metadata?.content_captured === false) {
    return "the call's content was not captured by its emitter (content_captured: false)";
  }
  const kind = scorerKindOf(ev);
  if (isBlank(input.sample.output) && kind.outputOptional !== true) return 'the sample has no output';
  const needs = kind.needs(ev);
  if (needs.expected && isBlank(input.groundTruth?.expected ?? input.sample.expected)) {
    return 'no expected value (the prompt uses {{expected}})';
  }
  if (needs.baseline && (input.baseline === null || isBlank(input.baseline.output))) {
    return 'no baseline output';
  }
  return null;
}

/** Whether a run of the plan will call a paid model: it generates, or one of its evaluators asks a model. */
export function callsModels(plan: Pick<RunPlan, 'generated' | 'evaluators'>): boolean {
  return plan.generated !== null || plan.evaluators.some((ev) => kinds.get(kindOf(ev))?.paid?.(ev) === true);
}
