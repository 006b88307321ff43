/**
 * The shapes the dashboard reads, derived from the server's own schemas and answer builders (as the
 * TypeScript client's types are): a field the server renames or drops fails the web build. Type-only:
 * nothing of the server is bundled.
 */
import type { Evaluator, EvaluatorBody, Me, Run, RunPlanSummary, RunSample } from '../../src/dashboard/views';

export type {
  AnswerScore,
  ApiKey,
  Container,
  CreateGuardPolicy,
  DashboardMonitor,
  DashboardMonitorDetail,
  Dataset,
  Evaluator,
  EvaluatorBody,
  GuardCheck,
  GuardCheckInput,
  GuardPolicy,
  GuardSpec,
  GuardVerdictCounts,
  GuardVerdictSummary,
  Invitation,
  InvitationLink,
  InvitationLinkInfo,
  Me,
  Model,
  ModelAnswer,
  Monitor,
  MonitorEvaluatorState,
  MonitorResults,
  MonitorSample,
  Organization,
  OrganizationDetail,
  PerEval,
  PlaygroundRequest,
  Project,
  ProjectBudget,
  ProjectRef,
  PromptSummary,
  PromptVersion,
  Run,
  RunComparison,
  RunSpend,
  VerdictExample,
} from '../../src/dashboard/views';

export type User = Me['user'];
export type Sample = RunSample;
export type RunDetail = RunPlanSummary & { run: Run };
export type Side = NonNullable<Run['sample']>;
export type CallTotals = NonNullable<NonNullable<Run['metrics']>['judge']>;

export type EvaluatorType = EvaluatorBody['type'];
export type GraderType = Exclude<EvaluatorType, 'judge' | 'code' | TrajectoryType>;
/** The trajectory grader types (tool_call_match, trajectory_length): made through the API, shown here. */
export type TrajectoryType = 'tool_call_match' | 'trajectory_length';
/** The grader types, as the API names them (checked against the API's own list). */
export const GRADER_TYPES = [
  'string_check',
  'text_similarity',
  'score_model',
  'label_model',
] as const satisfies readonly GraderType[];

/** The evaluator's type (judge, code or a grader type), from its object type `evaluator.<type>`. */
export function evaluatorType(e: Pick<Evaluator, 'object'>): EvaluatorType {
  return e.object.slice('evaluator.'.length) as EvaluatorType;
}

/** An evaluator of a grader type, narrowed. */
export type GraderEvaluator = Exclude<
  Evaluator,
  { object: 'evaluator.judge' | 'evaluator.code' | `evaluator.${TrajectoryType}` }
>;
export function isGrader(e: Evaluator): e is GraderEvaluator {
  return e.object !== 'evaluator.judge' && e.object !== 'evaluator.code' && !('match_mode' in e);
}

export const TERMINAL = ['completed', 'error', 'cancelled'];
