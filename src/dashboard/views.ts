/**
 * The shapes the dashboard's web app reads, derived from the server code that produces them (type-only:
 * the web app loads none of this at run time). API resources come from the client's types, themselves
 * inferred from the schemas the server validates with; the dashboard's own answers from the functions
 * that build them.
 */
import type { ApiKeyView } from '../auth/key-store.js';
import type { RunResults as ApiResults, Run as ApiRun, RunSample as ApiSample } from '../client/types.js';
import type { PerEvalResult } from '../engine/aggregate.js';
import type { RunMetrics } from '../engine/progress.js';
import type { CreateEvaluator } from '../evaluators/schemas.js';
import type { AnswerScore, ModelAnswer } from '../playground/answer.js';
import type { EditableRequest } from '../playground/schemas.js';
import type { PromptSummary, PromptVersion } from '../prompts/schemas.js';
import type { queueState } from '../runs/service.js';
import type { BudgetState } from '../shared/budget.js';
import type { InvitationLinkView, inspectInvitationLink } from './invite-links.js';
import type { DashboardMonitor, DashboardMonitorDetail, MonitorEvaluatorState } from './monitor-view.js';
import type { invitationsFor, listOrganizations, organizationDetail, ProjectAccess } from './orgs.js';
import type { planSummary } from './run-summary.js';
import type { meView } from './sessions.js';

export type {
  CodeEvaluator,
  Container,
  Dataset,
  Evaluator,
  JudgeEvaluator,
  Model,
  Monitor,
  MonitorResults,
  MonitorSample,
  RunComparison,
  RunSpend,
} from '../client/types.js';
export type {
  CreateGuardPolicy,
  GuardCheck,
  GuardCheckInput,
  GuardPolicy,
  GuardSpec,
  GuardVerdictCounts,
  GuardVerdictSummary,
  VerdictExample,
} from '../guards/schemas.js';
export type {
  AnswerScore,
  DashboardMonitor,
  DashboardMonitorDetail,
  EditableRequest as PlaygroundRequest,
  ModelAnswer,
  MonitorEvaluatorState,
  PromptSummary,
  PromptVersion,
};
export type Me = ReturnType<typeof meView>;
/** The body of an evaluator's creation: its grader fields' allowed values (metrics, operations). */
export type EvaluatorBody = CreateEvaluator;
export type Organization = Awaited<ReturnType<typeof listOrganizations>>[number];
export type ProjectRef = Organization['projects'][number];
export type OrganizationDetail = Awaited<ReturnType<typeof organizationDetail>>;
export type Invitation = Awaited<ReturnType<typeof invitationsFor>>[number];
export type InvitationLink = InvitationLinkView;
/** What an invitation link's page shows before it is used (`accounts`: a name and password can be chosen). */
export type InvitationLinkInfo = Awaited<ReturnType<typeof inspectInvitationLink>> & { accounts: boolean };
export type Project = ProjectAccess;
export type ApiKey = ApiKeyView & BudgetState;
/** The project's budget and the spend of its current period. */
export type ProjectBudget = BudgetState;
/** A run page's extras beside the run: evaluator names, launches, the labels its sides name by id. */
export type RunPlanSummary = Awaited<ReturnType<typeof planSummary>>;

/**
 * A run as the server builds it: the contract leaves `metrics`, `per_model[].model` and the per-evaluator
 * extras open (free objects), so they are taken from the engine types that fill them.
 */
export type RunQueueState = Awaited<ReturnType<typeof queueState>>;
export type PerEval = Omit<PerEvalResult, 'evaluator_name' | 'break_reason' | 'expected_count'> &
  Partial<Pick<PerEvalResult, 'evaluator_name' | 'break_reason' | 'expected_count'>>;
type ApiLaunch = NonNullable<ApiResults['per_model']>[number];
export type LaunchResult = Omit<ApiLaunch, 'model' | 'per_eval'> & {
  model: { slug: string } | null;
  per_eval: Record<string, PerEval | null> | null;
};
export type RunResults = Omit<ApiResults, 'per_model'> & { per_model: LaunchResult[] | null };
export type Run = Omit<ApiRun, 'metrics' | 'results'> & {
  metrics: (Partial<RunMetrics> & { queue?: RunQueueState }) | null;
  results: RunResults | null;
};
/** A per-sample row; `error` and `extra` are the scorers' own (`{code, message}`, pairwise verdicts). */
export type RunSample = Omit<ApiSample, 'error' | 'extra'> & {
  error: { code?: string; message?: string } | null;
  extra: { calls?: number; verdicts?: string[]; inconsistent?: boolean } | null;
};
