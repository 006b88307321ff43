import type { EvaluatorSnapshot, PlannedSide, SideName } from '../engine/plan.js';
import { requireEvaluator } from '../evaluators/service.js';
import { snapshotOf } from '../evaluators/snapshot.js';
import { judgeDialect } from '../llm/dialects/registry.js';
import type { ResolvedModel } from '../llm/models/types.js';
import { ApiError, type ValidationIssue } from '../shared/errors.js';
import type { JsonObject } from '../shared/json.js';
import type { ResolveContext } from '../sources/types.js';
import type { RunContext } from './context.js';
import type { CreateRun, DataSource } from './schemas.js';

/**
 * Run creation's checks and resolution: the request's shape (contract 4.3), its sides checked and
 * resolved by their source kinds (`src/sources/`), and its evaluators snapshotted as they are now.
 */

/** Rules 1-3 of contract 4.3 and the shape of each side, all reported at once. */
export function validateShape(ctx: Pick<RunContext, 'environments' | 'sourceKinds'>, body: CreateRun): void {
  const { environments } = ctx;
  const issues: ValidationIssue[] = [];
  if (!body.sample && !body.ground_truth) {
    issues.push({
      loc: ['body'],
      msg: 'At least one of sample and ground_truth must be provided',
      type: 'value_error',
    });
  }
  issues.push(...ctx.sourceKinds.sidesIssues(body));
  const env = body.environment ?? 'main';
  if (!environments.includes(env)) {
    issues.push({
      loc: ['body', 'environment'],
      msg: `Unknown environment '${env}'; configured: ${environments.join(', ')}`,
      type: 'enum',
    });
  }
  if (issues.length) throw ApiError.validation(issues);
}

export function stableJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(stableJson).join(',')}]`;
  if (value && typeof value === 'object') {
    const entries = Object.entries(value as JsonObject).filter(([, v]) => v !== undefined);
    entries.sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${stableJson(v)}`).join(',')}}`;
  }
  return JSON.stringify(value);
}

async function resolveModelRef(
  ctx: RunContext,
  projectId: string,
  ref: string,
  loc: (string | number)[],
  prefix = '',
): Promise<ResolvedModel> {
  try {
    return await ctx.catalog.resolveModel(projectId, ref);
  } catch (err) {
    if (!(err instanceof ApiError)) throw err;
    // A model named in the body and missing is a missing resource (404, like a dataset); a provider not
    // enabled, or an evaluator whose model no longer resolves, is a mistake in the request: 422 naming it.
    if (err.code === 'model_not_found' && prefix === '') {
      throw new ApiError('not_found', `Model '${ref}' not found`, { resource: 'model', ref, loc });
    }
    if (err.code === 'model_not_found' || err.code === 'provider_not_configured') {
      throw ApiError.invalid(loc, `${prefix}${err.message}`, err.code);
    }
    throw err;
  }
}

/** A request's side resolved through its kind (an omitted side: the container's task logs). */
export async function resolveSide(
  ctx: RunContext,
  projectId: string,
  name: SideName,
  source: DataSource | null | undefined,
  containerId: string,
): Promise<PlannedSide> {
  const resolve: ResolveContext = {
    db: ctx.db,
    findDataset: (project, ref) => ctx.catalog.findDataset(project, ref),
    checkModel: async (project, ref, loc) => {
      await resolveModelRef(ctx, project, ref, loc);
    },
  };
  return ctx.sourceKinds.resolveSide(resolve, projectId, name, source, containerId);
}

export async function snapshotEvaluators(
  ctx: RunContext,
  projectId: string,
  refs: string[],
  containerId: string,
  hasBaseline: boolean,
): Promise<EvaluatorSnapshot[]> {
  const issues: ValidationIssue[] = [];
  const snapshots: EvaluatorSnapshot[] = [];
  for (const [i, ref] of refs.entries()) {
    const row = await requireEvaluator(ctx.db, projectId, ref).catch((err: unknown) => {
      if (err instanceof ApiError)
        throw new ApiError('not_found', `Evaluator '${ref}' not found`, {
          resource: 'evaluator',
          ref,
          loc: ['body', 'evaluators', i],
        });
      throw err;
    });
    if (row.container_id !== null && row.container_id !== containerId) {
      issues.push({
        loc: ['body', 'evaluators', i],
        msg: `Evaluator '${ref}' belongs to container '${row.container_label}'`,
        type: 'value_error',
      });
    }
    if (row.mode === 'pairwise' && !hasBaseline) {
      issues.push({
        loc: ['body', 'baseline'],
        msg: `Pairwise evaluator '${ref}' needs a baseline`,
        type: 'missing',
      });
    }
    if (snapshots.some((s) => s.id === row.id)) {
      issues.push({
        loc: ['body', 'evaluators', i],
        msg: `Evaluator '${ref}' is listed twice`,
        type: 'value_error',
      });
    }
    snapshots.push(snapshotOf(row));
  }
  if (issues.length) throw ApiError.validation(issues);
  for (const [i, ev] of snapshots.entries()) {
    // Judges, and the graders that call a model (score_model, label_model, cosine's embeddings).
    const calls = ctx.scorerKinds.capabilitiesOf(ev);
    if (!calls.callsModel || !calls.model) continue;
    const model = await resolveModelRef(
      ctx,
      projectId,
      calls.model,
      ['body', 'evaluators', i],
      `Evaluator '${ev.name}' cannot run: `,
    );
    // A judge asking for Anthropic's dialect needs a model served by Anthropic, and one asking for chat
    // completions a model that is not.
    const wantsAnthropic = judgeDialect(ev.api)?.native?.adapter.kind === 'anthropic';
    if (ev.api && wantsAnthropic !== (model.provider === 'anthropic')) {
      throw ApiError.invalid(
        ['body', 'evaluators', i],
        `Evaluator '${ev.name}' asks for api '${ev.api}' but its model is served by ${model.provider}`,
      );
    }
  }
  if (snapshots.some((s) => ctx.scorerKinds.capabilitiesOf(s).sandbox)) {
    const sandbox = await ctx.catalog.sandbox();
    if (!sandbox.available) {
      throw new ApiError(
        'sandbox_unavailable',
        `Code evaluators cannot run here: ${sandbox.reason ?? 'no sandbox'}`,
      );
    }
  }
  return snapshots;
}
