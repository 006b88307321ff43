import { type Need, requireNeeds } from '../auth/content.js';
import type { Permission } from '../auth/permissions.js';
import type { RunPlan } from '../engine/plan.js';
import { parseJson } from '../shared/json.js';
import type { SourceKind } from '../sources/types.js';
import type { RunContext } from './context.js';
import type { CreateRun } from './schemas.js';

/**
 * A run reads its data sources and evaluators and calls models on the caller's behalf, and its samples
 * show the rows it read: the caller needs the same rights it would need to do that itself. The route's
 * own permission (`evaluation:*`) is not enough.
 */

function require(permissions: readonly string[], needed: Permission, why: string): void {
  requireNeeds(permissions, [{ permission: needed, why }]);
}

/**
 * What reading the kinds' items needs (each kind declares it in the source registry), and with
 * `creating`, what creating a run over them needs besides (a generate side calls models).
 */
export function checkReads(
  ctx: Pick<RunContext, 'sourceKinds'>,
  kinds: readonly SourceKind[],
  permissions: readonly string[],
  creating = false,
): void {
  requireNeeds(permissions, ctx.sourceKinds.readNeeds(kinds, creating));
}

/** Before anything is looked up: what the request's data sources and evaluators need. */
export function checkCreate(
  ctx: Pick<RunContext, 'sourceKinds'>,
  body: CreateRun,
  permissions: readonly string[],
): void {
  require(permissions, 'evaluators:read', 'the run uses evaluators');
  checkReads(ctx, ctx.sourceKinds.requestKinds(body), permissions, true);
}

/**
 * Once the evaluators are known: what their kinds ask of the run's creator (judges, and graders that
 * call a model, ask to call it), as the scorer registry declares it.
 */
export function checkJudges(
  ctx: Pick<RunContext, 'scorerKinds'>,
  plan: Pick<RunPlan, 'evaluators'>,
  permissions: readonly string[],
): void {
  for (const ask of ctx.scorerKinds.permissionsAskedBy(plan.evaluators, 'the run'))
    require(permissions, ask.permission, ask.why);
}

/**
 * Reading a run's per-sample rows (or an eval run's output items) shows the rows it read: the 403 names
 * the side that read them (a run over a dataset whose omitted ground truth is the container's task logs
 * needs logs:read for that side, not for the dataset).
 */
export function checkSampleAccess(
  ctx: Pick<RunContext, 'sourceKinds'>,
  planText: string,
  permissions: readonly string[],
): void {
  requireNeeds(permissions, sampleAccessNeeds(ctx, planText));
}

/** What reading the samples of a run with this stored plan needs (nothing for a plan not readable). */
export function sampleAccessNeeds(ctx: Pick<RunContext, 'sourceKinds'>, planText: string): Need[] {
  const plan = parseJson<RunPlan | null>(planText, null);
  return plan ? ctx.sourceKinds.sampleNeeds(plan.sides) : [];
}
