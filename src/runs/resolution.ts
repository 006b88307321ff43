import { findContainer } from '../catalog/containers/repository.js';
import type { ResolvedModel } from '../catalog/models/types.js';
import { checkRange, DEFAULT_RANGE, parseRange } from '../catalog/range.js';
import type { EvaluatorSnapshot, PlannedSide, SideName } from '../engine/plan.js';
import { graderOfRow } from '../evaluators/graders.js';
import { requireEvaluator } from '../evaluators/service.js';
import { ApiError, type ValidationIssue } from '../shared/errors.js';
import { type JsonObject, parseJson } from '../shared/json.js';
import type { RunContext } from './context.js';
import type { CreateRun, DataSource } from './schemas.js';

/**
 * Run creation's checks and resolution: the request's shape (contract 4.3), its sides resolved to
 * datasets, containers or models, and its evaluators snapshotted as they are now.
 */

const VARIANT_FIELDS: Record<string, string[]> = {
  dataset: ['dataset'],
  container: ['container'],
  generate: ['models'],
};

function sideIssues(name: SideName, source: DataSource): ValidationIssue[] {
  const type = source.type ?? 'generate';
  const issues: ValidationIssue[] = [];
  const allowed = VARIANT_FIELDS[type] ?? [];
  for (const field of ['dataset', 'container', 'models']) {
    const given = (source as Record<string, unknown>)[field] !== undefined;
    if (allowed.includes(field) && !given) {
      issues.push({
        loc: ['body', name, field],
        msg: `Field required for a ${type} data source`,
        type: 'missing',
      });
    } else if (!allowed.includes(field) && given) {
      issues.push({
        loc: ['body', name, field],
        msg: `Not allowed in a ${type} data source`,
        type: 'extra_forbidden',
      });
    }
  }
  if (source.range) {
    const checked = checkRange(source.range);
    if (!checked.ok) issues.push({ loc: ['body', name, 'range'], msg: checked.msg, type: checked.type });
  }
  return issues;
}

/** Rules 1-3 of contract 4.3 and the shape of each side, all reported at once. */
export function validateShape(body: CreateRun, environments: readonly string[]): void {
  const issues: ValidationIssue[] = [];
  if (!body.sample && !body.ground_truth) {
    issues.push({
      loc: ['body'],
      msg: 'At least one of sample and ground_truth must be provided',
      type: 'value_error',
    });
  }
  for (const name of ['sample', 'ground_truth', 'baseline'] as const) {
    const s = body[name];
    if (s) issues.push(...sideIssues(name, s));
  }
  const sampleGen = body.sample && (body.sample.type ?? 'generate') === 'generate';
  const truthGen = body.ground_truth && (body.ground_truth.type ?? 'generate') === 'generate';
  if (sampleGen && truthGen) {
    issues.push({
      loc: ['body'],
      msg: 'At least one of sample and ground_truth must not be of type generate, so that there is input data to evaluate',
      type: 'value_error',
    });
  }
  if (
    body.baseline &&
    (body.baseline.type ?? 'generate') === 'generate' &&
    (body.baseline.models?.length ?? 0) > 1
  ) {
    issues.push({
      loc: ['body', 'baseline', 'models'],
      msg: 'A generate baseline takes exactly one model',
      type: 'too_long',
    });
  }
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

export async function resolveSide(
  ctx: RunContext,
  projectId: string,
  name: SideName,
  source: DataSource | null | undefined,
  containerId: string,
): Promise<PlannedSide> {
  const defaultRange = parseRange(DEFAULT_RANGE, ['body', name, 'range']);
  if (!source) return { type: 'container', ref: containerId, models: [], range: defaultRange };
  const type = source.type ?? 'generate';
  const range = source.range ? parseRange(source.range, ['body', name, 'range']) : defaultRange;
  if (type === 'dataset') {
    const ds = await ctx.catalog.findDataset(projectId, source.dataset ?? '');
    if (!ds)
      throw new ApiError('not_found', `Dataset '${source.dataset}' not found`, {
        resource: 'dataset',
        ref: source.dataset,
        loc: ['body', name, 'dataset'],
      });
    return { type, ref: ds.id, models: [], range };
  }
  if (type === 'container') {
    const c = await findContainer(ctx.db, projectId, source.container ?? '');
    if (!c)
      throw new ApiError('not_found', `Container '${source.container}' not found`, {
        resource: 'container',
        ref: source.container,
        loc: ['body', name, 'container'],
      });
    return { type, ref: c.id, models: [], range };
  }
  const models = source.models ?? [];
  await Promise.all(models.map((m, i) => resolveModelRef(ctx, projectId, m, ['body', name, 'models', i])));
  return { type, ref: null, models, range };
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
    snapshots.push({
      id: row.id,
      name: row.name,
      type: row.type,
      mode: row.mode,
      model: row.model,
      prompt: row.prompt,
      api: row.api,
      inference_parameters: parseJson<JsonObject>(row.inference_parameters, {}),
      pass_threshold: row.pass_threshold,
      source: row.source,
      requirements: parseJson<string[]>(row.requirements, []),
      grader: graderOfRow(row),
    });
  }
  if (issues.length) throw ApiError.validation(issues);
  for (const [i, ev] of snapshots.entries()) {
    // Judges, and the graders that call a model (score_model, label_model, cosine's embeddings).
    if (ev.type === 'code' || !ev.model) continue;
    const model = await resolveModelRef(
      ctx,
      projectId,
      ev.model,
      ['body', 'evaluators', i],
      `Evaluator '${ev.name}' cannot run: `,
    );
    const wantsMessages = ev.api === 'messages';
    if (ev.api && wantsMessages !== (model.provider === 'anthropic')) {
      throw ApiError.invalid(
        ['body', 'evaluators', i],
        `Evaluator '${ev.name}' asks for api '${ev.api}' but its model is served by ${model.provider}`,
      );
    }
  }
  if (snapshots.some((s) => s.type === 'code')) {
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
