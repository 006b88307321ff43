import type { Kysely } from 'kysely';
import type { Item } from '../catalog/items.js';
import type { Database } from '../db/schema.js';
import type { GenerateSide, LaunchPrompt, PlannedSide, RunPlan, SideName } from '../engine/plan.js';
import { isGenerated } from '../engine/plan.js';
import type { Generation } from '../engine/positions.js';
import type { PromptVersion } from '../prompts/schemas.js';
import { resolvePrompt, toVersion, type VersionRef } from '../prompts/service.js';
import { PromptVariableError, renderMessages, writeVariables } from '../prompts/template.js';
import { ApiError, type ValidationIssue } from '../shared/errors.js';
import { isObject } from '../shared/json.js';
import { datasetSource } from './dataset.js';
import { GenerationTemplateError } from './openai-generation.js';
import type { SideBody } from './types.js';

/**
 * Experiments: a generate side that names prompt versions besides (or instead of) models. Each launch is
 * one prompt version × one model (prompt-major: the launches of the first version come first); the
 * item's fields fill the version's variables (an object input's keys, or a non-object input as `input`),
 * and the rendered messages go through the same model call as plain generation. Labels are resolved to
 * versions when the run is born and the versions' contents are stored in the plan, so a label moved or a
 * version added later never changes the run.
 */

/** A prompt a side names: by name or id, at a version, a label or (neither) the latest. */
export interface PromptPick {
  name: string;
  version?: number;
  label?: string;
}

/** What the plan keeps of a version to render it: everything a request needs, nothing else. */
interface StoredVersion {
  id: string;
  name: string;
  version: number;
  label: string | null;
  messages: PromptVersion['messages'];
  variables: PromptVersion['variables'];
  model: string | null;
  parameters: Record<string, unknown>;
  tools: PromptVersion['tools'];
  response_format: PromptVersion['response_format'];
}

/** The experiment's part of a generate side's `request`. */
interface ExperimentRequest {
  /** The versions, in the order the side named them. */
  prompt_versions: StoredVersion[];
  /** Launch i renders `prompt_versions[launch_prompts[i]]`. */
  launch_prompts: number[];
  /** The models the side named (null: each version's own). */
  models: string[] | null;
  /** The side's sampling parameters, over each version's own (null: the versions' alone). */
  parameters?: Record<string, unknown> | null;
}

const picksOf = (body: SideBody): PromptPick[] =>
  Array.isArray(body.prompts) ? (body.prompts as PromptPick[]) : [];

/** Whether a request's generate side names prompts. */
export function namesPrompts(body: SideBody): boolean {
  return picksOf(body).length > 0;
}

/** The body's problems the schema cannot see: a version and a label together; a baseline of many launches. */
export function promptIssues(name: SideName, body: SideBody): ValidationIssue[] {
  const picks = picksOf(body);
  const issues: ValidationIssue[] = [];
  picks.forEach((p, i) => {
    if (p.version !== undefined && p.label !== undefined) {
      issues.push({
        loc: ['body', name, 'prompts', i],
        msg: 'A prompt takes a version or a label, not both',
        type: 'value_error',
      });
    }
  });
  if (name === 'baseline' && picks.length > 1) {
    issues.push({
      loc: ['body', 'baseline', 'prompts'],
      msg: 'A generate baseline takes exactly one prompt version',
      type: 'too_long',
    });
  }
  return issues;
}

async function loadVersion(
  db: Kysely<Database>,
  projectId: string,
  pick: PromptPick,
  loc: (string | number)[],
): Promise<StoredVersion> {
  const which: VersionRef = {};
  if (pick.version !== undefined) which.version = pick.version;
  if (pick.label !== undefined) which.label = pick.label;
  try {
    const r = await resolvePrompt(db, projectId, pick.name, which);
    const v = toVersion(r.prompt, r.version, r.labels);
    return {
      id: v.prompt_id,
      name: v.name,
      version: v.version,
      label: pick.label ?? null,
      messages: v.messages,
      variables: v.variables,
      model: v.model,
      parameters: v.parameters as Record<string, unknown>,
      tools: v.tools,
      response_format: v.response_format,
    };
  } catch (err) {
    // Another project's prompt is not found in this one, like an unknown name, version or label.
    if (err instanceof ApiError && err.code === 'not_found') {
      throw new ApiError('not_found', err.message, { ...(err.details ?? {}), loc });
    }
    throw err;
  }
}

/**
 * An experiment's generate side: each named version resolved (labels to versions, now), and its launches,
 * version × model. Without `models`, each version runs on its own model (422 for one that names none).
 */
export async function resolveExperiment(
  db: Kysely<Database>,
  projectId: string,
  name: SideName,
  body: SideBody,
  models: string[],
  parameters: Record<string, unknown> | null,
  checkModel: (ref: string, loc: (string | number)[]) => Promise<void>,
): Promise<Pick<GenerateSide, 'models' | 'prompts' | 'request'>> {
  const picks = picksOf(body);
  const versions = await Promise.all(
    picks.map((p, i) => loadVersion(db, projectId, p, ['body', name, 'prompts', i])),
  );
  const launchModels: string[] = [];
  const launchPrompts: number[] = [];
  const issues: ValidationIssue[] = [];
  versions.forEach((v, i) => {
    const own = models.length > 0 ? models : v.model ? [v.model] : [];
    if (own.length === 0) {
      issues.push({
        loc: ['body', name, 'prompts', i],
        msg: `Prompt '${v.name}' version ${v.version} names no model: give the side's models`,
        type: 'missing',
      });
    }
    for (const m of own) {
      launchModels.push(m);
      launchPrompts.push(i);
    }
  });
  if (issues.length) throw ApiError.validation(issues);
  if (models.length === 0) {
    // The versions' own models, checked as the side's models are.
    const own = [...new Set(versions.map((v) => v.model as string))];
    await Promise.all(
      own.map((m) => checkModel(m, ['body', name, 'prompts', versions.findIndex((v) => v.model === m)])),
    );
  }
  const request: ExperimentRequest = {
    prompt_versions: versions,
    launch_prompts: launchPrompts,
    models: models.length > 0 ? models : null,
    parameters,
  };
  const prompts: LaunchPrompt[] = launchPrompts.map((i) => {
    const v = versions[i] as StoredVersion;
    return { id: v.id, name: v.name, version: v.version, label: v.label };
  });
  return { models: launchModels, prompts, request: { experiment: request } };
}

function experimentOf(side: GenerateSide): ExperimentRequest | null {
  const e = side.request?.experiment;
  return isObject(e) ? (e as unknown as ExperimentRequest) : null;
}

/** Whether a planned generate side is an experiment's. */
export function isExperiment(side: GenerateSide): boolean {
  return experimentOf(side) !== null;
}

/** The variables an item gives a prompt: an object input's fields, or any other input as `input`. */
export function itemVariables(item: Pick<Item, 'input'>): Record<string, unknown> {
  const input = item.input;
  return isObject(input) ? input : { input };
}

function render(
  version: StoredVersion,
  item: Item,
  model: string,
  parameters: Record<string, unknown> | null,
) {
  try {
    const messages = renderMessages(version.messages, version.variables, itemVariables(item));
    return {
      ...version.parameters,
      ...parameters,
      ...(version.tools ? { tools: version.tools } : {}),
      ...(version.response_format ? { response_format: version.response_format } : {}),
      model,
      messages,
      stream: false,
    };
  } catch (err) {
    if (err instanceof PromptVariableError) {
      throw new GenerationTemplateError(
        `Prompt '${version.name}' version ${version.version}: ${err.message}`,
      );
    }
    throw err;
  }
}

/** An experiment's generation: each launch's version rendered over the item, the answer's text kept. */
export function experimentGeneration(side: GenerateSide): Generation {
  const e = experimentOf(side);
  if (!e) throw new Error('the side names no prompt versions');
  return {
    request: (item, model, launch) => {
      const version = e.prompt_versions[e.launch_prompts[launch] ?? -1];
      if (!version) throw new Error(`launch ${launch} renders no prompt version`);
      return render(version, item, model, e.parameters ?? null);
    },
    keep: (result) => result.text,
    output: (kept) => kept,
  };
}

/** The API's view of an experiment's prompts: each version named, with the label it was picked by. */
export function experimentView(
  side: GenerateSide,
): { models: string[]; prompts: LaunchPrompt[]; parameters: Record<string, unknown> | null } | null {
  const e = experimentOf(side);
  if (!e) return null;
  const prompts = e.prompt_versions.map((v) => ({
    id: v.id,
    name: v.name,
    version: v.version,
    label: v.label,
  }));
  return { models: e.models ?? [...new Set(side.models)], prompts, parameters: e.parameters ?? null };
}

/** Items checked for their variables when a run is created; past them, a missing one errs per sample. */
export const CHECKED_ITEMS = 1000;
const MAX_REPORTED = 20;

/**
 * The variables an experiment's versions need, checked against the dataset items the run will read (the
 * first CHECKED_ITEMS of them): every missing or mistyped one, reported at creation rather than as
 * errored samples. Sides over other sources (task logs) are checked per sample.
 */
export async function experimentInputIssues(
  db: Kysely<Database>,
  sides: RunPlan['sides'],
  generated: 'sample' | 'ground_truth' | null,
): Promise<ValidationIssue[]> {
  if (generated === null) return [];
  const gen = sides[generated];
  const sourceName: SideName = generated === 'sample' ? 'ground_truth' : 'sample';
  const source: PlannedSide = sides[sourceName];
  if (!isGenerated(gen) || isGenerated(source) || source.type !== datasetSource.type || !datasetSource.read) {
    return [];
  }
  const e = experimentOf(gen);
  if (!e) return [];
  const start = source.range.start + gen.range.start;
  const end = Math.min(source.range.end, source.range.start + gen.range.end, start + CHECKED_ITEMS);
  if (end <= start) return [];
  const items = await datasetSource.read(db, source, { start, end });
  const issues: ValidationIssue[] = [];
  for (const [p, version] of e.prompt_versions.entries()) {
    for (const [i, item] of items.entries()) {
      if (issues.length >= MAX_REPORTED) return issues;
      try {
        writeVariables(version.messages, version.variables, itemVariables(item));
      } catch (err) {
        if (!(err instanceof PromptVariableError)) throw err;
        const where = item.id
          ? `item '${item.id}' (position ${gen.range.start + i})`
          : `position ${gen.range.start + i}`;
        issues.push({
          loc: ['body', generated, 'prompts', p],
          msg: `Prompt '${version.name}' version ${version.version} cannot be rendered for ${where} of the ${sourceName} side: ${err.message}`,
          type: err.problems.some((x) => x.kind === 'missing') ? 'missing' : 'type_error',
        });
      }
    }
  }
  return issues;
}
