/**
 * The scorer registry: evaluator kind → scorer kind. A kind is the evaluator's grader type when it has
 * a grader (OpenAI-style graders, python graders of eval runs), else its type (judge, code). A new
 * scorer is one file in this folder plus its line below; an unknown kind is an error, never a fallback.
 * A registry is a value built once per app (`createScorerRegistry`, by the composition root), never
 * changed after: two apps in one process may score with different kinds.
 */

import type { Permission } from '../../auth/permissions.js';
import { type ScoreInput, type Scorer, ScorerSetupError } from '../../scoring/types.js';
import type { ErrorBody } from '../../shared/errors.js';
import type { CriteriaType, TrajectoryEvaluatorType } from '../../shared/grader-types.js';
import type { EvaluatorSnapshot, RunPlan } from '../plan.js';
import { isBlank } from '../positions.js';
import { codeScorer } from './code.js';
import { graderScorer, pythonGraderKind } from './graders.js';
import { judgeScorer } from './judge.js';
import type { EvaluatorShape, ScorerKind, ScorerPorts } from './kind.js';
import { trajectoryScorer } from './trajectory.js';

export type { EvaluatorShape, Needs, ScorerKind, ScorerPorts } from './kind.js';

/** The kinds every evaluator of this version may be: the compiler asks for one scorer per grader type. */
export const BUILT_IN_SCORERS: Readonly<
  Record<'judge' | 'code' | CriteriaType | TrajectoryEvaluatorType, ScorerKind>
> = Object.freeze({
  judge: judgeScorer,
  code: codeScorer,
  string_check: graderScorer,
  text_similarity: graderScorer,
  score_model: graderScorer,
  label_model: graderScorer,
  python: pythonGraderKind,
  tool_call_match: trajectoryScorer,
  trajectory_length: trajectoryScorer,
});

/** The scorer kinds of one registry by evaluator kind (read-only once built). */
type Table = ReadonlyMap<string, ScorerKind>;

/** The evaluator's kind: its grader's type when it has a grader, else its own type. */
export function kindOf(ev: Pick<EvaluatorShape, 'type' | 'grader'>): string {
  return ev.grader?.type ?? ev.type;
}

/** The scorer kind of an evaluator; an unknown kind is a setup error of the run. */
function scorerKindOf(table: Table, ev: Pick<EvaluatorShape, 'type' | 'grader'>): ScorerKind {
  const kind = table.get(kindOf(ev));
  if (!kind) {
    throw new ScorerSetupError('unknown_evaluator_type', `No scorer is registered for '${kindOf(ev)}'`);
  }
  return kind;
}

/**
 * The scorer of an evaluator for one launch. A kind that runs code is refused on a worker without a
 * sandbox (`sandbox_unavailable`: the evaluator's positions fail, the run's other evaluators go on).
 */
async function createScorer(table: Table, ev: EvaluatorSnapshot, ports: ScorerPorts): Promise<Scorer> {
  const kind = scorerKindOf(table, ev);
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

/**
 * Why a position is an error of `ev` before any scorer runs (so no judge is ever paid to grade it), or
 * null: the sample is unreadable (a recorded call that failed, a session too long to read), or so is
 * the baseline a pairwise evaluator compares it with. Checked before `missingReason`.
 */
function errorReason(table: Table, ev: EvaluatorSnapshot, input: ScoreInput): ErrorBody | null {
  if (input.sample?.unreadable) return input.sample.unreadable;
  const baseline = input.baseline?.unreadable;
  if (baseline && scorerKindOf(table, ev).needs(ev).baseline) {
    return { code: baseline.code, message: `The baseline: ${baseline.message}` };
  }
  return null;
}

/** Why a position cannot be scored by `ev` (it is then `missing`), or null when it can. */
function missingReason(table: Table, ev: EvaluatorSnapshot, input: ScoreInput): string | null {
  if (input.sample === null) return 'no sample at this position';
  // An ingested call whose emitter recorded no messages: nothing to judge, rather than an empty answer.
  if (input.sample.metadata?.content_captured === false) {
    return "the call's content was not captured by its emitter (content_captured: false)";
  }
  const kind = scorerKindOf(table, ev);
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

/** What scoring with an evaluator uses besides computing, as its kind declares it. */
export interface Capabilities {
  /** It calls a model (a paid call: budgets, and the creator's right to call models). */
  callsModel: boolean;
  /** The model it calls, as the evaluator names it; null when it names none. */
  model: string | null;
  /** It runs code in the sandbox (code evaluators, python graders). */
  sandbox: boolean;
  /** What it asks of the creator of a run or monitor that scores with it. */
  permissions: readonly Permission[];
}

/** A model-calling kind asks to see the project's models and to call them. */
const MODEL_PERMISSIONS: readonly Permission[] = ['models:read', 'inference:write'];

/** The capabilities of an evaluator; an unknown kind is a setup error, as for its scorer. */
function capabilitiesOf(table: Table, ev: EvaluatorShape): Capabilities {
  const kind = scorerKindOf(table, ev);
  const callsModel = kind.callsModel?.(ev) === true;
  return {
    callsModel,
    model: kind.modelOf?.(ev) ?? null,
    sandbox: kind.sandboxed !== undefined,
    permissions: callsModel ? MODEL_PERMISSIONS : [],
  };
}

/** One permission asked of a creator, and why (the 403's message says it). */
export interface PermissionAsk {
  permission: Permission;
  why: string;
}

const WHY: Partial<Record<Permission, string>> = { 'models:read': 'uses', 'inference:write': 'calls' };

/**
 * What creating `subject` (`the run`, `the monitor`) that scores with the evaluators asks of its
 * creator, each permission once, in the order the kinds declare them: "the run uses judge models".
 */
function permissionsAskedBy(
  table: Table,
  evaluators: readonly EvaluatorShape[],
  subject: string,
  models = 'judge models',
): PermissionAsk[] {
  const asked = new Set(evaluators.flatMap((ev) => capabilitiesOf(table, ev).permissions));
  return [...asked].map((permission) => ({
    permission,
    why: `${subject} ${WHY[permission] ?? 'needs'} ${models}`,
  }));
}

/** What a plan's model calls are decided from: its generated side, and its evaluators. */
type ModelPlan = { generated: RunPlan['generated']; evaluators: readonly EvaluatorShape[] };

/** The scorer kinds one app knows, and every rule that depends on an evaluator's kind. */
export interface ScorerRegistry {
  /** The scorer kind of an evaluator; an unknown kind is a setup error of the run. */
  scorerKindOf(ev: Pick<EvaluatorShape, 'type' | 'grader'>): ScorerKind;
  /** The scorer of an evaluator for one launch (`sandbox_unavailable` for code without a sandbox). */
  createScorer(ev: EvaluatorSnapshot, ports: ScorerPorts): Promise<Scorer>;
  /** Why a position is an error of `ev` before any scorer runs, or null. */
  errorReason(ev: EvaluatorSnapshot, input: ScoreInput): ErrorBody | null;
  /** Why a position cannot be scored by `ev` (it is then `missing`), or null when it can. */
  missingReason(ev: EvaluatorSnapshot, input: ScoreInput): string | null;
  /** The capabilities of an evaluator; an unknown kind is a setup error, as for its scorer. */
  capabilitiesOf(ev: EvaluatorShape): Capabilities;
  /** What creating `subject` that scores with the evaluators asks of its creator, each permission once. */
  permissionsAskedBy(
    evaluators: readonly EvaluatorShape[],
    subject: string,
    models?: string,
  ): PermissionAsk[];
  /** Whether a run of the plan will call a paid model: it generates, or one of its evaluators asks a model. */
  callsModels(plan: ModelPlan): boolean;
}

/**
 * A registry of these scorer kinds by evaluator kind (by default the built-in ones). A test or a
 * deployment that scores with another kind builds its own registry with it and hands it to the app.
 */
export function createScorerRegistry(
  kinds: Readonly<Record<string, ScorerKind>> = BUILT_IN_SCORERS,
): ScorerRegistry {
  const table: Table = new Map(Object.entries(kinds));
  return Object.freeze({
    scorerKindOf: (ev: Pick<EvaluatorShape, 'type' | 'grader'>) => scorerKindOf(table, ev),
    createScorer: (ev: EvaluatorSnapshot, ports: ScorerPorts) => createScorer(table, ev, ports),
    errorReason: (ev: EvaluatorSnapshot, input: ScoreInput) => errorReason(table, ev, input),
    missingReason: (ev: EvaluatorSnapshot, input: ScoreInput) => missingReason(table, ev, input),
    capabilitiesOf: (ev: EvaluatorShape) => capabilitiesOf(table, ev),
    permissionsAskedBy: (evaluators: readonly EvaluatorShape[], subject: string, models?: string) =>
      permissionsAskedBy(table, evaluators, subject, models),
    callsModels: (plan: ModelPlan) =>
      plan.generated !== null || plan.evaluators.some((ev) => capabilitiesOf(table, ev).callsModel),
  });
}
