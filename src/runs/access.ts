import { type Need, requireNeeds } from '../auth/content.js';
import type { Permission } from '../auth/permissions.js';
import type { RunPlan } from '../engine/plan.js';
import { permissionsAskedBy } from '../engine/scorers/registry.js';
import { parseJson } from '../shared/json.js';
import { readNeeds, requestKinds, sampleNeeds } from '../sources/registry.js';
import type { SourceKind } from '../sources/types.js';
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
  kinds: readonly SourceKind[],
  permissions: readonly string[],
  creating = false,
): void {
  requireNeeds(permissions, readNeeds(kinds, creating));
}

/** Before anything is looked up: what the request's data sources and evaluators need. */
export function checkCreate(body: CreateRun, permissions: readonly string[]): void {
  require(permissions, 'evaluators:read', 'the run uses evaluators');
  checkReads(requestKinds(body), permissions, true);
}

/**
 * Once the evaluators are known: what their kinds ask of the run's creator (judges, and graders that
 * call a model, ask to call it), as the scorer registry declares it.
 */
export function checkJudges(plan: Pick<RunPlan, 'evaluators'>, permissions: readonly string[]): void {
  for (const ask of permissionsAskedBy(plan.evaluators, 'the run'))
    require(permissions, ask.permission, ask.why);
}

/**
 * Reading a run's per-sample rows (or an eval run's output items) shows the rows it read: the 403 names
 * the side that read them (a run over a dataset whose omitted ground truth is the container's task logs
 * needs logs:read for that side, not for the dataset).
 */
export function checkSampleAccess(planText: string, permissions: readonly string[]): void {
  requireNeeds(permissions, sampleAccessNeeds(planText));
}

/** What reading the samples of a run with this stored plan needs (nothing for a plan not readable). */
export function sampleAccessNeeds(planText: string): Need[] {
  const plan = parseJson<RunPlan | null>(planText, null);
  return plan ? sampleNeeds(plan.sides) : [];
}
