import type { Kysely } from 'kysely';
import { findContainer } from '../catalog/containers/repository.js';
import { requireContainer } from '../catalog/containers/service.js';
import type { Database, EvaluatorTable } from '../db/schema.js';
import type { ScorerRegistry } from '../engine/scorers/registry.js';
import type { ListResponse, Page } from '../http/schemas.js';
import { type CodeToCheck, checkCodeEvaluator } from '../scoring/code/check-source.js';
import type { SubGrader } from '../scoring/graders/schemas.js';
import { ApiError, type ValidationIssue } from '../shared/errors.js';
import { newId, nowIso } from '../shared/ids.js';
import { type JsonObject, parseJson } from '../shared/json.js';
import { buildGrader, GRADER_FIELDS, graderOfRow, isGraderType, toGraderEvaluator } from './graders.js';
import * as repo from './repository.js';
import { scaleOf } from './scale.js';
import type { CreateEvaluator, Evaluator, PatchEvaluator } from './schemas.js';
import { applyTemplate, checkScale } from './template.js';
import {
  isTrajectoryType,
  TRAJECTORY_FIELDS,
  toTrajectoryEvaluator,
  trajectoryOfRow,
  validateTrajectory,
} from './trajectory.js';

export interface EvaluatorContext {
  db: Kysely<Database>;
  python: string;
  /** Checks a code evaluator's source and requirements elsewhere (the sandbox runner); else with `python`. */
  checkCode?: (input: CodeToCheck) => Promise<void>;
  /** Resolves a judge's model as a run would (throws `model_not_found` or `provider_not_configured`). */
  resolveModel(projectId: string, ref: string): Promise<unknown>;
  /** The app's scorer kinds: the model an evaluator's kind calls. */
  scorerKinds: ScorerRegistry;
}

export function toEvaluator(row: repo.EvaluatorRow): Evaluator {
  const common = {
    project_id: row.project_id,
    container_id: row.container_id,
    container: row.container_label,
    id: row.id,
    name: row.name,
    description: row.description ?? '',
    created_at: row.created_at,
    updated_at: row.updated_at,
    metadata: parseJson<JsonObject>(row.metadata, {}),
    pass_threshold: row.pass_threshold,
    mode: row.mode,
    scale: scaleOf(row),
    template: row.template,
  };
  if (isGraderType(row.type)) return toGraderEvaluator(row.type, common, graderOfRow(row));
  if (isTrajectoryType(row.type)) return toTrajectoryEvaluator(row.type, common, trajectoryOfRow(row));
  if (row.type === 'code') {
    return {
      object: 'evaluator.code',
      ...common,
      source: row.source ?? '',
      requirements: parseJson<string[]>(row.requirements, []),
    };
  }
  return {
    object: 'evaluator.judge',
    ...common,
    api: row.api,
    model: row.model ?? '',
    prompt: row.prompt ?? '',
    inference_parameters: parseJson<JsonObject>(row.inference_parameters, {}),
  };
}

const JUDGE_ONLY = ['model', 'prompt', 'api'] as const;
const CODE_ONLY = ['source', 'requirements'] as const;

/** The rules that span fields: what each type needs and what it cannot carry. */
function shapeIssues(row: EvaluatorTable, given: Record<string, unknown>): ValidationIssue[] {
  const issues: ValidationIssue[] = [];
  const need = (field: 'model' | 'prompt' | 'source') => {
    if (row[field] === null) {
      issues.push({
        loc: ['body', field],
        msg: `Field required for ${row.type} evaluators`,
        type: 'missing',
      });
    }
  };
  const forbid = (fields: readonly string[]) => {
    for (const f of fields) {
      const v = given[f];
      if (v !== undefined && v !== null) {
        issues.push({
          loc: ['body', f],
          msg: `Not allowed for ${row.type} evaluators`,
          type: 'extra_forbidden',
        });
      }
    }
  };
  if (isGraderType(row.type)) {
    forbid(TRAJECTORY_FIELDS);
    forbid([...JUDGE_ONLY.filter((f) => f !== 'model'), ...CODE_ONLY]);
    if (row.mode !== 'pointwise') {
      issues.push({ loc: ['body', 'mode'], msg: `Grader evaluators are pointwise`, type: 'value_error' });
    }
    const params = given.inference_parameters;
    if (params && Object.keys(params).length > 0) {
      issues.push({
        loc: ['body', 'inference_parameters'],
        msg: `Not allowed for ${row.type} evaluators; use sampling_params`,
        type: 'extra_forbidden',
      });
    }
    return issues;
  }
  forbid(GRADER_FIELDS);
  forbid(TRAJECTORY_FIELDS);
  if (row.type === 'judge') {
    need('model');
    need('prompt');
    forbid(CODE_ONLY);
  } else {
    need('source');
    forbid(JUDGE_ONLY);
    const params = given.inference_parameters;
    if (params && Object.keys(params).length > 0) {
      issues.push({
        loc: ['body', 'inference_parameters'],
        msg: 'Not allowed for code evaluators',
        type: 'extra_forbidden',
      });
    }
  }
  return issues;
}

async function validate(
  ctx: EvaluatorContext,
  row: EvaluatorTable,
  given: Record<string, unknown>,
): Promise<void> {
  const issues = isTrajectoryType(row.type)
    ? validateTrajectory(row, row.type, given)
    : shapeIssues(row, given);
  issues.push(...checkScale(given.scale));
  let grader: SubGrader | null = null;
  if (isGraderType(row.type)) {
    const built = buildGrader(row.type, row.name, graderOfRow(row), given, row.pass_threshold);
    issues.push(...built.issues);
    grader = built.grader;
    row.grader = JSON.stringify(grader);
    // Stored as the evaluator's model: the one its grader calls (the scorer registry says which).
    row.model = ctx.scorerKinds.capabilitiesOf({ type: row.type, grader }).model;
  }
  if (issues.length) throw ApiError.validation(issues);
  // A judge's model, and the model a grader calls (score_model, label_model, cosine's embedding_model).
  const modelField = row.type === 'text_similarity' ? 'embedding_model' : 'model';
  const calls = ctx.scorerKinds.capabilitiesOf({ type: row.type, grader, model: row.model });
  if (calls.callsModel && calls.model && given[modelField] !== undefined) {
    await checkModel(ctx, row.project_id, calls.model, modelField);
  }
  if (row.type === 'code' && (given.source !== undefined || given.requirements !== undefined)) {
    const code = { source: row.source, requirements: parseJson<string[] | null>(row.requirements, null) };
    await (ctx.checkCode ? ctx.checkCode(code) : checkCodeEvaluator(ctx.python, code));
  }
}

/** A judge's or grader's model must resolve and its provider be enabled now, not only when a run starts. */
async function checkModel(
  ctx: EvaluatorContext,
  projectId: string,
  model: string,
  field: string,
): Promise<void> {
  try {
    await ctx.resolveModel(projectId, model);
  } catch (err) {
    if (
      err instanceof ApiError &&
      (err.code === 'model_not_found' || err.code === 'provider_not_configured')
    ) {
      const hint =
        err.code === 'model_not_found'
          ? ' (register it with POST /v1/models, or use openai/<name> or anthropic/<name> on a server that enables them)'
          : '';
      throw ApiError.invalid(['body', field], `${err.message}${hint}`, err.code);
    }
    throw err;
  }
}

async function resolveContainer(ctx: EvaluatorContext, projectId: string, ref: string | null | undefined) {
  if (ref === undefined || ref === null) return null;
  return requireContainer(ctx.db, projectId, ref);
}

export async function requireEvaluator(
  db: Kysely<Database>,
  projectId: string,
  ref: string,
): Promise<repo.EvaluatorRow> {
  const row = await repo.findEvaluator(db, projectId, ref);
  if (!row) throw ApiError.notFound('Evaluator', ref);
  return row;
}

export async function createEvaluator(
  ctx: EvaluatorContext,
  projectId: string,
  body: CreateEvaluator,
): Promise<Evaluator> {
  body = applyTemplate(body);
  const container = await resolveContainer(ctx, projectId, body.container);
  const id = newId('evl');
  const now = nowIso();
  const row: EvaluatorTable = {
    id,
    project_id: projectId,
    container_id: container?.id ?? null,
    type: body.type,
    name: body.name ?? id,
    description: body.description ?? null,
    metadata: JSON.stringify(body.metadata ?? {}),
    pass_threshold: body.pass_threshold ?? null,
    mode: body.mode ?? 'pointwise',
    api: body.api ?? null,
    model: body.model ?? null,
    prompt: body.prompt ?? null,
    inference_parameters: JSON.stringify(body.inference_parameters ?? {}),
    source: body.source ?? null,
    requirements: body.requirements ? JSON.stringify(body.requirements) : null,
    grader: null,
    scale: body.scale ? JSON.stringify(body.scale) : null,
    template: body.template ?? null,
    created_at: now,
    updated_at: now,
  };
  await validate(ctx, row, body);
  await repo.insertEvaluator(ctx.db, row);
  return toEvaluator({ ...row, container_label: container?.label ?? null });
}

export async function patchEvaluator(
  ctx: EvaluatorContext,
  projectId: string,
  ref: string,
  body: PatchEvaluator,
): Promise<Evaluator> {
  const current = await requireEvaluator(ctx.db, projectId, ref);
  const patch: Partial<EvaluatorTable> = { updated_at: nowIso() };
  let label = current.container_label;
  if (body.container !== undefined) {
    const container = await resolveContainer(ctx, projectId, body.container);
    patch.container_id = container?.id ?? null;
    label = container?.label ?? null;
  }
  if (body.name !== undefined) patch.name = body.name ?? current.id;
  if (body.mode !== undefined) patch.mode = body.mode ?? 'pointwise';
  if (body.scale !== undefined) patch.scale = body.scale ? JSON.stringify(body.scale) : null;
  // An edited prompt is the user's own: it no longer is the catalog template's.
  if (body.prompt !== undefined && body.prompt !== current.prompt) patch.template = null;
  if (body.metadata !== undefined) patch.metadata = JSON.stringify(body.metadata);
  if (body.inference_parameters !== undefined)
    patch.inference_parameters = JSON.stringify(body.inference_parameters);
  if (body.requirements !== undefined)
    patch.requirements = body.requirements ? JSON.stringify(body.requirements) : null;
  for (const f of ['description', 'pass_threshold', 'api', 'model', 'prompt', 'source'] as const) {
    if (body[f] !== undefined) (patch as Record<string, unknown>)[f] = body[f];
  }
  const { container_label: _, ...currentRow } = current;
  const merged: EvaluatorTable = { ...currentRow, ...patch };
  await validate(ctx, merged, body);
  if (isGraderType(merged.type) || isTrajectoryType(merged.type)) {
    patch.grader = merged.grader;
    patch.model = merged.model;
  }
  await repo.updateEvaluator(ctx.db, current.id, patch);
  return toEvaluator({ ...merged, container_label: label });
}

export async function listEvaluators(
  ctx: EvaluatorContext,
  projectId: string,
  containerRef: string | null | undefined,
  page: Page,
  projectWide = false,
): Promise<ListResponse<Evaluator>> {
  let containerId: string | null = null;
  if (containerRef !== undefined && containerRef !== null) {
    const container = await findContainer(ctx.db, projectId, containerRef);
    // Filtering by a container that does not exist matches nothing (project-wide ones included: a typo
    // in the container must not look like a container without evaluators of its own).
    if (!container) return { object: 'list', data: [], total: 0 };
    containerId = container.id;
  }
  const { rows, total } = await repo.listEvaluators(ctx.db, projectId, containerId, page, projectWide);
  return { object: 'list', data: rows.map(toEvaluator), total };
}

export async function deleteEvaluator(
  ctx: EvaluatorContext,
  projectId: string,
  id: string,
): Promise<{ id: string }> {
  const row = await repo.findEvaluator(ctx.db, projectId, id);
  if (row && row.id !== id) {
    // A name: delete takes the id, so that a name reused after a delete cannot remove the wrong one.
    throw new ApiError(
      'not_found',
      `Delete takes an evaluator's id, not its name: '${id}' is the evaluator ${row.id}; delete /v1/evaluators/${row.id}`,
      { resource: 'evaluator', ref: id, id: row.id },
    );
  }
  if (!row) throw ApiError.notFound('Evaluator', id);
  await repo.deleteEvaluator(ctx.db, row.id);
  return { id: row.id };
}
