/**
 * The shapes the dashboard reads, derived from the server's own schemas and answer builders (as the
 * TypeScript client's types are): a field the server renames or drops fails the web build. Type-only:
 * nothing of the server is bundled.
 */
import type { Evaluator, Me, Run, RunPlanSummary, RunSample } from '../../src/dashboard/views';

export type {
  ApiKey,
  Container,
  Dataset,
  Evaluator,
  Invitation,
  Me,
  Model,
  Monitor,
  MonitorResults,
  MonitorSample,
  Organization,
  OrganizationDetail,
  PerEval,
  Project,
  ProjectBudget,
  ProjectRef,
  Run,
  RunComparison,
  RunSpend,
} from '../../src/dashboard/views';

export type User = Me['user'];
export type Sample = RunSample;
export type RunDetail = RunPlanSummary & { run: Run };
export type Side = NonNullable<Run['sample']>;
export type CallTotals = NonNullable<NonNullable<Run['metrics']>['judge']>;

/** judge or code, from the evaluator's object type. */
export function evaluatorType(e: Pick<Evaluator, 'object'>): 'judge' | 'code' {
  return e.object === 'evaluator.code' ? 'code' : 'judge';
}

export const TERMINAL = ['completed', 'error', 'cancelled'];
