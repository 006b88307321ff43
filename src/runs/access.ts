import { grants, type Permission } from '../auth/permissions.js';
import type { RunPlan } from '../engine/plan.js';
import { ApiError } from '../shared/errors.js';
import { parseJson } from '../shared/json.js';
import type { CreateRun } from './schemas.js';

/**
 * A run reads its data sources and evaluators and calls models on the caller's behalf, and its samples
 * show the rows it read: the caller needs the same rights it would need to do that itself. The route's
 * own permission (`evaluation:*`) is not enough.
 */

function require(permissions: readonly string[], needed: Permission, why: string): void {
  if (!grants(permissions, needed)) {
    throw new ApiError('permission_denied', `This API key lacks the '${needed}' permission (${why})`, {
      required: needed,
    });
  }
}

type SideType = 'dataset' | 'container' | 'generate';

function sideTypes(body: Pick<CreateRun, 'sample' | 'ground_truth' | 'baseline'>): SideType[] {
  // An omitted sample or ground truth side resolves to the container's task logs.
  const of = (s: { type?: string } | null | undefined): SideType =>
    (s?.type as SideType | undefined) ?? 'container';
  const out = [of(body.sample), of(body.ground_truth)];
  if (body.baseline) out.push(of(body.baseline));
  return out;
}

function readsOf(types: readonly SideType[], permissions: readonly string[]): void {
  if (types.includes('dataset')) require(permissions, 'data:read', 'the run reads a dataset');
  if (types.includes('container')) require(permissions, 'logs:read', "the run reads a container's task logs");
}

/** Before anything is looked up: what the request's data sources and evaluators need. */
export function checkCreate(body: CreateRun, permissions: readonly string[]): void {
  require(permissions, 'evaluators:read', 'the run uses evaluators');
  const types = sideTypes(body);
  readsOf(types, permissions);
  if (types.includes('generate')) {
    require(permissions, 'models:read', 'the run generates with models');
    require(permissions, 'inference:write', 'the run calls models to generate');
  }
}

/** Once the evaluators are known: judges (and graders that call a model) call their model. */
export function checkJudges(plan: Pick<RunPlan, 'evaluators'>, permissions: readonly string[]): void {
  if (plan.evaluators.some((e) => e.type === 'judge' || (e.type !== 'code' && e.model))) {
    require(permissions, 'models:read', 'the run uses judge models');
    require(permissions, 'inference:write', 'the run calls judge models');
  }
}

/** Reading a run's per-sample rows shows the rows it read. */
export function checkSampleAccess(planText: string, permissions: readonly string[]): void {
  const plan = parseJson<RunPlan | null>(planText, null);
  if (!plan) return;
  const { sample, ground_truth: groundTruth, baseline } = plan.sides;
  readsOf(
    // A monitor's selections are task logs of its container.
    [sample, groundTruth, ...(baseline ? [baseline] : [])].map((s) =>
      s.type === 'monitor' ? 'container' : s.type,
    ),
    permissions,
  );
}
