import type { UploadContext } from '../catalog/json-lines.js';
import type { ResolvedModel } from '../llm/models/types.js';
import { graderIssues } from '../scoring/graders/validate.js';
import type { ValidationIssue } from '../shared/errors.js';
import { isObject, type JsonObject } from '../shared/json.js';
import { evalFileSource, evalRowsSource } from '../sources/eval-rows.js';
import type { GenerationRequest } from '../sources/openai-generation.js';
import { type SourceRegistry, UnknownSourceKind } from '../sources/registry.js';
import { storedCompletionsSource } from '../sources/stored-completions.js';
import { storedResponsesSource } from '../sources/stored-responses.js';
import type { SourceKind } from '../sources/types.js';
import { metadataIssues } from './evals-validation.js';
import { responsesSourceIssues } from './stored-responses-source.js';

/**
 * The data source of an eval run, checked (every problem named) and turned into what the run engine
 * executes: the rows (inline or a file), and for `completions` / `responses` how each item's
 * generation request is built.
 */

type Loc = (string | number)[];
const DS: Loc = ['body', 'data_source'];
const SOURCES: Record<string, string[]> = {
  jsonl: ['file_content', 'file_id'],
  completions: ['file_content', 'file_id', 'stored_completions'],
  responses: ['file_content', 'file_id', 'responses'],
};
const SAMPLING: Record<string, string[]> = {
  completions: [
    'max_completion_tokens',
    'max_completions_tokens',
    'reasoning_effort',
    'response_format',
    'seed',
    'temperature',
    'tools',
    'top_p',
  ],
  responses: [
    'max_completion_tokens',
    'max_completions_tokens',
    'reasoning_effort',
    'seed',
    'temperature',
    'text',
    'tools',
    'top_p',
  ],
};

export interface CheckedSource {
  type: 'jsonl' | 'completions' | 'responses';
  source: JsonObject;
  /** `completions` / `responses`: the model named, and how its requests are built. */
  model: string | null;
  request: GenerationRequest | null;
}

/** Inline rows (`file_content`): a list of `{item, sample?}`. */
function contentIssues(source: JsonObject, loc: Loc): ValidationIssue[] {
  if (!Array.isArray(source.content)) {
    return [{ loc: [...loc, 'content'], msg: 'Field required: a list of {item, sample?}', type: 'missing' }];
  }
  const issues: ValidationIssue[] = [];
  source.content.forEach((row, i) => {
    if (!isObject(row) || !isObject(row.item)) {
      issues.push({ loc: [...loc, 'content', i, 'item'], msg: 'Field required: an object', type: 'missing' });
    } else if (row.sample !== undefined && !isObject(row.sample)) {
      issues.push({ loc: [...loc, 'content', i, 'sample'], msg: 'sample must be an object', type: 'object' });
    }
  });
  return issues.slice(0, 10);
}

/** Each eval rows source kind's own checks, by the kind's name in the source registry. */
const SOURCE_CHECKS: Record<string, (source: JsonObject, loc: Loc) => ValidationIssue[]> = {
  [evalRowsSource.type]: contentIssues,
  [evalFileSource.type]: (source, loc) =>
    typeof source.id !== 'string' || source.id === ''
      ? [{ loc: [...loc, 'id'], msg: 'Field required: a file id', type: 'missing' }]
      : [],
  [storedCompletionsSource.type]: (source, loc) => metadataIssues(source.metadata, [...loc, 'metadata']),
  [storedResponsesSource.type]: responsesSourceIssues,
};

function sourceIssues(sourceKinds: SourceRegistry, kind: string, source: unknown): ValidationIssue[] {
  const loc = [...DS, 'source'];
  if (!isObject(source)) return [{ loc, msg: 'Field required: an object with a type', type: 'missing' }];
  const types = SOURCES[kind] ?? [];
  const rows = typeof source.type === 'string' ? sourceKinds.evalSourceKind(source.type) : undefined;
  if (typeof source.type !== 'string' || !types.includes(source.type) || !rows) {
    return [{ loc: [...loc, 'type'], msg: `type must be one of ${types.join(', ')}`, type: 'enum' }];
  }
  return SOURCE_CHECKS[rows.type]?.(source, loc) ?? [];
}

/** The source kind of a checked data source's rows (the source registry's, by OpenAI source type). */
export function evalRowsKind(sourceKinds: SourceRegistry, ds: JsonObject): SourceKind {
  const type = isObject(ds.source) ? String(ds.source.type) : '';
  const kind = sourceKinds.evalSourceKind(type);
  if (!kind) throw new UnknownSourceKind(type);
  return kind;
}

function templateIssues(kind: string, input: unknown): ValidationIssue[] {
  const loc = [...DS, 'input_messages'];
  if (!isObject(input)) return [{ loc, msg: `Field required for a ${kind} data source`, type: 'missing' }];
  if (input.type === 'item_reference') {
    return typeof input.item_reference === 'string' && input.item_reference.startsWith('item.')
      ? []
      : [
          {
            loc: [...loc, 'item_reference'],
            msg: 'must be a path into the item, like item.input',
            type: 'value_error',
          },
        ];
  }
  if (input.type !== 'template') {
    return [{ loc: [...loc, 'type'], msg: 'type must be one of template, item_reference', type: 'enum' }];
  }
  if (!Array.isArray(input.template) || input.template.length === 0) {
    return [{ loc: [...loc, 'template'], msg: 'Field required: a list of messages', type: 'missing' }];
  }
  // The template's messages have the shape of a score_model grader's input: check them as one.
  const probe = {
    type: 'score_model',
    name: 'template',
    model: 'm',
    input: input.template.map(plainMessage),
  };
  return graderIssues(probe, loc).map((i) => ({
    ...i,
    loc: [...loc, 'template', ...i.loc.slice(loc.length + 1)],
  }));
}

/** A template message without `type: "message"` (the chat shape the engine renders). */
function plainMessage(m: unknown): unknown {
  if (!isObject(m)) return m;
  const { type: _type, ...rest } = m;
  return rest;
}

function samplingIssues(kind: string, params: unknown): ValidationIssue[] {
  if (params === undefined) return [];
  const loc = [...DS, 'sampling_params'];
  if (!isObject(params)) return [{ loc, msg: 'sampling_params must be an object', type: 'object' }];
  const allowed = SAMPLING[kind] ?? [];
  const issues: ValidationIssue[] = [];
  for (const [k, v] of Object.entries(params)) {
    if (!allowed.includes(k))
      issues.push({ loc: [...loc, k], msg: 'Extra field not allowed', type: 'extra_forbidden' });
    else if (
      ['temperature', 'top_p', 'seed', 'max_completion_tokens', 'max_completions_tokens'].includes(k)
    ) {
      if (v !== null && typeof v !== 'number')
        issues.push({ loc: [...loc, k], msg: 'must be a number', type: 'number' });
    } else if (k === 'tools' && v !== null && !Array.isArray(v)) {
      issues.push({ loc: [...loc, k], msg: 'must be a list of tools', type: 'array' });
    }
  }
  return issues;
}

/** Every problem of an eval run's `data_source`. */
export function dataSourceIssues(sourceKinds: SourceRegistry, ds: unknown): ValidationIssue[] {
  if (!isObject(ds)) return [{ loc: DS, msg: 'Field required', type: 'missing' }];
  const kind = ds.type;
  if (typeof kind !== 'string' || !(kind in SOURCES)) {
    return [{ loc: [...DS, 'type'], msg: 'type must be one of jsonl, completions, responses', type: 'enum' }];
  }
  const issues = sourceIssues(sourceKinds, kind, ds.source);
  if (kind === 'jsonl') {
    for (const k of Object.keys(ds)) {
      if (k !== 'type' && k !== 'source') {
        issues.push({ loc: [...DS, k], msg: 'Not allowed for a jsonl data source', type: 'extra_forbidden' });
      }
    }
    return issues;
  }
  // Stored completions and responses may be graded as they are: no model, no input messages.
  const stored =
    isObject(ds.source) && sourceKinds.evalSourceKind(String(ds.source.type))?.eval?.rows === 'selected';
  if (stored && ds.model === undefined && ds.input_messages === undefined) {
    return [...issues, ...samplingIssues(kind, ds.sampling_params)];
  }
  if (typeof ds.model !== 'string' || ds.model === '') {
    issues.push({
      loc: [...DS, 'model'],
      msg: `Field required: the model that generates the samples`,
      type: 'missing',
    });
  }
  issues.push(...templateIssues(kind, ds.input_messages), ...samplingIssues(kind, ds.sampling_params));
  return issues;
}

/** Responses tools (`{type: "function", name, parameters}`) as chat tools. */
function chatTools(tools: unknown): unknown {
  if (!Array.isArray(tools)) return tools;
  return tools.map((t) => {
    if (!isObject(t) || t.type !== 'function' || isObject(t.function)) return t;
    const { type, ...fn } = t;
    return { type, function: fn };
  });
}

/** Responses' `text.format` as a chat `response_format`. */
function responseFormat(text: unknown): unknown {
  if (!isObject(text) || !isObject(text.format)) return undefined;
  const f = text.format;
  if (f.type !== 'json_schema') return { type: f.type };
  const { type, ...schema } = f;
  return { type, json_schema: schema };
}

/** The fixed fields of every generation request of the run, in the chat API's terms. */
export function requestParams(kind: string, params: JsonObject | undefined): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  if (!params) return out;
  const max = params.max_completion_tokens ?? params.max_completions_tokens;
  if (typeof max === 'number') out.max_completion_tokens = max;
  for (const k of ['temperature', 'top_p', 'seed', 'reasoning_effort'] as const) {
    if (params[k] !== undefined && params[k] !== null) out[k] = params[k];
  }
  if (params.tools) out.tools = kind === 'responses' ? chatTools(params.tools) : params.tools;
  const format = kind === 'responses' ? responseFormat(params.text) : params.response_format;
  if (format !== undefined && format !== null) out.response_format = format;
  return out;
}

export function checkedSource(ds: JsonObject, model: ResolvedModel | null): CheckedSource {
  const kind = ds.type as CheckedSource['type'];
  const source = ds.source as JsonObject;
  if (kind === 'jsonl' || !isObject(ds.input_messages))
    return { type: kind, source, model: null, request: null };
  const input = ds.input_messages;
  const request: GenerationRequest = {
    params: requestParams(kind, ds.sampling_params as JsonObject | undefined),
  };
  if (input.type === 'template') {
    request.template = (input.template as unknown[]).map(plainMessage) as GenerationRequest['template'];
  } else request.itemReference = String(input.item_reference);
  return { type: kind, source, model: model?.slug ?? null, request };
}

export type { UploadContext };
