import type { Kysely } from 'kysely';
import type { Principal } from '../auth/authenticator.js';
import { reviewerOf } from '../auth/reviewer.js';
import type { Page } from '../db/paging.js';
import type { Database } from '../db/schema.js';
import type { ListResponse } from '../http/schemas.js';
import { ApiError, type ValidationIssue } from '../shared/errors.js';
import { newId } from '../shared/ids.js';
import { parseJson } from '../shared/json.js';
import type {
  CreatePrompt,
  CreatePromptVersion,
  Prompt,
  PromptLabel,
  PromptSummary,
  PromptVersion,
} from './schemas.js';
import * as store from './store.js';
import { type PromptMessage, VARIABLE_NAME, type VariableType, variablesOfMessages } from './template.js';

/** What the prompt routes need: the database. */
export interface PromptPorts {
  db: Kysely<Database>;
}

export const LATEST = 'latest';

/** Which version of a prompt: a number, a label, or (neither) the latest. */
export interface VersionRef {
  version?: number;
  label?: string;
}

/** A prompt with the version a reference picked, as stored (decoded once). */
export interface ResolvedPrompt {
  prompt: store.PromptRow;
  version: store.VersionRow;
  labels: Record<string, number>;
}

function labelMap(prompt: store.PromptRow, rows: readonly store.LabelRow[]): Record<string, number> {
  const labels: Record<string, number> = {};
  for (const r of rows) if (r.prompt_id === prompt.id) labels[r.name] = Number(r.version);
  labels[LATEST] = Number(prompt.latest_version);
  return labels;
}

export function toVersion(
  prompt: store.PromptRow,
  row: store.VersionRow,
  labels: Record<string, number>,
): PromptVersion {
  const version = Number(row.version);
  return {
    object: 'prompt.version',
    prompt_id: prompt.id,
    name: prompt.name,
    version,
    messages: parseJson<PromptVersion['messages']>(row.messages, []),
    variables: parseJson<PromptVersion['variables']>(row.variables, {}),
    model: row.model,
    parameters: parseJson<PromptVersion['parameters']>(row.parameters, {}),
    tools: parseJson<PromptVersion['tools']>(row.tools, null),
    response_format: parseJson<PromptVersion['response_format']>(row.response_format, null),
    commit_message: row.commit_message,
    author: row.author,
    created_at: row.created_at,
    labels: Object.entries(labels)
      .filter(([, v]) => v === version)
      .map(([name]) => name),
  };
}

function toSummary(prompt: store.PromptRow, labels: Record<string, number>): PromptSummary {
  return {
    object: 'prompt',
    id: prompt.id,
    project_id: prompt.project_id,
    name: prompt.name,
    description: prompt.description,
    latest_version: Number(prompt.latest_version),
    labels,
    created_at: prompt.created_at,
    updated_at: prompt.updated_at,
  };
}

export function toPrompt(resolved: ResolvedPrompt): Prompt {
  const { prompt, version, labels } = resolved;
  return { ...toSummary(prompt, labels), version: toVersion(prompt, version, labels) };
}

export async function requirePrompt(db: Kysely<Database>, projectId: string, ref: string) {
  const prompt = await store.findPrompt(db, projectId, ref);
  if (!prompt) throw ApiError.notFound('Prompt', ref);
  return prompt;
}

/** The problems of a version's fields the schema cannot see: declared types of variables, unknown labels. */
function versionIssues(body: CreatePromptVersion): ValidationIssue[] {
  const issues: ValidationIssue[] = [];
  for (const label of body.labels ?? []) {
    if (label === LATEST) {
      issues.push({
        loc: ['body', 'labels'],
        msg: "'latest' is implied (the newest version) and cannot be set",
        type: 'value_error',
      });
    }
  }
  // Braces that look like a reference but do not name a variable would be sent to the model as they are.
  body.messages.forEach((m, i) => {
    for (const match of m.content.matchAll(/\{\{([^}]*)\}\}/g)) {
      if (!VARIABLE_NAME.test((match[1] ?? '').trim())) {
        issues.push({
          loc: ['body', 'messages', i, 'content'],
          msg: `'${match[0]}' is not a variable reference ({{name}}: letters, digits and _)`,
          type: 'value_error',
        });
      }
    }
  });
  return issues;
}

async function newVersion(
  db: Kysely<Database>,
  principal: Principal,
  body: CreatePromptVersion,
): Promise<store.NewVersion> {
  const issues = versionIssues(body);
  if (issues.length > 0) throw ApiError.validation(issues);
  const messages: PromptMessage[] = body.messages;
  const declared: Record<string, VariableType> = { ...body.variables };
  for (const name of variablesOfMessages(messages)) declared[name] ??= 'string';
  return {
    messages: JSON.stringify(body.messages),
    variables: JSON.stringify(declared),
    model: body.model ?? null,
    parameters: JSON.stringify(body.parameters ?? {}),
    tools: body.tools ? JSON.stringify(body.tools) : null,
    response_format: body.response_format ? JSON.stringify(body.response_format) : null,
    commit_message: body.commit_message ?? null,
    author: await reviewerOf(db, principal),
    created_at: new Date().toISOString(),
  };
}

export async function createPrompt(ports: PromptPorts, principal: Principal, body: CreatePrompt) {
  const { name, description, ...fields } = body;
  const first = await newVersion(ports.db, principal, fields);
  const id = newId('prm');
  await store.insertPrompt(
    ports.db,
    {
      id,
      project_id: principal.projectId,
      name,
      description: description ?? null,
      latest_version: 1,
      created_at: first.created_at,
      updated_at: first.created_at,
    },
    first,
    fields.labels ?? [],
  );
  return toPrompt(await resolvePrompt(ports.db, principal.projectId, id, {}));
}

export async function listPrompts(
  ports: PromptPorts,
  projectId: string,
  page: Page,
  name?: string,
): Promise<ListResponse<PromptSummary>> {
  const { rows, total } = await store.listPrompts(ports.db, projectId, page, name);
  const labels = await store.labelsOf(
    ports.db,
    rows.map((r) => r.id),
  );
  return { object: 'list', data: rows.map((r) => toSummary(r, labelMap(r, labels))), total };
}

/**
 * The prompt (by id or name) at a version, a label or (neither) its latest; 404 for an unknown prompt,
 * version or label, 422 when both a version and a label are given.
 */
export async function resolvePrompt(
  db: Kysely<Database>,
  projectId: string,
  ref: string,
  which: VersionRef,
): Promise<ResolvedPrompt> {
  if (which.version !== undefined && which.label !== undefined) {
    throw ApiError.invalid(['query', 'label'], 'Give a version or a label, not both');
  }
  const prompt = await requirePrompt(db, projectId, ref);
  const labels = labelMap(prompt, await store.labelsOf(db, [prompt.id]));
  let number = Number(prompt.latest_version);
  if (which.version !== undefined) number = which.version;
  else if (which.label !== undefined) {
    const at = labels[which.label];
    if (at === undefined) {
      throw new ApiError('not_found', `Prompt '${prompt.name}' has no label '${which.label}'`, {
        resource: 'prompt_label',
        ref: which.label,
      });
    }
    number = at;
  }
  const version = await store.findVersion(db, prompt.id, number);
  if (!version) {
    throw new ApiError('not_found', `Prompt '${prompt.name}' has no version ${number}`, {
      resource: 'prompt_version',
      ref: String(number),
    });
  }
  return { prompt, version, labels };
}

export async function createVersion(
  ports: PromptPorts,
  principal: Principal,
  ref: string,
  body: CreatePromptVersion,
): Promise<PromptVersion> {
  const prompt = await requirePrompt(ports.db, principal.projectId, ref);
  const fields = await newVersion(ports.db, principal, body);
  const number = await store.insertVersion(ports.db, prompt.id, fields, body.labels ?? []);
  const resolved = await resolvePrompt(ports.db, principal.projectId, prompt.id, { version: number });
  return toVersion(resolved.prompt, resolved.version, resolved.labels);
}

export async function listVersions(
  ports: PromptPorts,
  projectId: string,
  ref: string,
  page: Page,
): Promise<ListResponse<PromptVersion>> {
  const prompt = await requirePrompt(ports.db, projectId, ref);
  const [rows, labelRows] = await Promise.all([
    store.listVersions(ports.db, prompt.id, page),
    store.labelsOf(ports.db, [prompt.id]),
  ]);
  const labels = labelMap(prompt, labelRows);
  return {
    object: 'list',
    data: rows.map((r) => toVersion(prompt, r, labels)),
    total: Number(prompt.latest_version),
  };
}

function labelView(
  prompt: store.PromptRow,
  name: string,
  row: store.LabelRow,
  previous: number | null,
): PromptLabel {
  return {
    object: 'prompt.label',
    prompt_id: prompt.id,
    name,
    version: Number(row.version),
    previous_version: previous,
    updated_by: row.updated_by,
    updated_at: row.updated_at,
  };
}

function notLatest(label: string): void {
  if (label === LATEST) {
    throw new ApiError('bad_request', "'latest' always names the newest version and cannot be moved", {
      label,
    });
  }
}

/** Moves a label to a version of the same prompt (404 for a version the prompt does not have). */
export async function moveLabel(
  ports: PromptPorts,
  principal: Principal,
  ref: string,
  label: string,
  version: number,
): Promise<PromptLabel> {
  notLatest(label);
  const prompt = await requirePrompt(ports.db, principal.projectId, ref);
  if (!(await store.findVersion(ports.db, prompt.id, version))) {
    throw new ApiError('not_found', `Prompt '${prompt.name}' has no version ${version}`, {
      resource: 'prompt_version',
      ref: String(version),
    });
  }
  const by = await reviewerOf(ports.db, principal);
  const previous = await store.moveLabel(ports.db, prompt.id, label, version, by);
  const row = await store.findLabel(ports.db, prompt.id, label);
  if (!row) throw ApiError.notFound('Prompt label', label);
  return labelView(prompt, label, row, previous);
}

/** Moves the label back to where its latest move found it (409 when there is nowhere to go back to). */
export async function rollbackLabel(
  ports: PromptPorts,
  principal: Principal,
  ref: string,
  label: string,
): Promise<PromptLabel> {
  notLatest(label);
  const prompt = await requirePrompt(ports.db, principal.projectId, ref);
  if (!(await store.findLabel(ports.db, prompt.id, label))) {
    throw new ApiError('not_found', `Prompt '${prompt.name}' has no label '${label}'`, {
      resource: 'prompt_label',
      ref: label,
    });
  }
  const by = await reviewerOf(ports.db, principal);
  const moved = await store.rollbackLabel(ports.db, prompt.id, label, by);
  if (!moved) {
    throw new ApiError('conflict', `Label '${label}' has no earlier version to roll back to`, { label });
  }
  const row = await store.findLabel(ports.db, prompt.id, label);
  if (!row) throw ApiError.notFound('Prompt label', label);
  return labelView(prompt, label, row, moved.from);
}

export async function deleteLabel(ports: PromptPorts, principal: Principal, ref: string, label: string) {
  notLatest(label);
  const prompt = await requirePrompt(ports.db, principal.projectId, ref);
  const by = await reviewerOf(ports.db, principal);
  if (!(await store.deleteLabel(ports.db, prompt.id, label, by))) {
    throw new ApiError('not_found', `Prompt '${prompt.name}' has no label '${label}'`, {
      resource: 'prompt_label',
      ref: label,
    });
  }
  return { object: 'prompt.label' as const, prompt_id: prompt.id, name: label, deleted: true as const };
}

/** The prompt's labels with their moves, newest first. */
export async function listLabels(ports: PromptPorts, projectId: string, ref: string) {
  const prompt = await requirePrompt(ports.db, projectId, ref);
  const [rows, moves] = await Promise.all([
    store.labelsOf(ports.db, [prompt.id]),
    store.movesOf(ports.db, prompt.id),
  ]);
  const data = rows.map((r) => ({
    name: r.name,
    version: Number(r.version),
    history: moves
      .filter((m) => m.label === r.name)
      .map((m) => ({
        action: m.action,
        from_version: m.from_version === null ? null : Number(m.from_version),
        to_version: m.to_version === null ? null : Number(m.to_version),
        reverted: Number(m.reverted) === 1,
        moved_by: m.moved_by,
        moved_at: m.moved_at,
      })),
  }));
  return { object: 'list' as const, data, total: data.length };
}
