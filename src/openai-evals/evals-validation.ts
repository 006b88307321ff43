import { Ajv } from 'ajv';
import { graderIssues } from '../scoring/graders/validate.js';
import type { ValidationIssue } from '../shared/errors.js';
import { CRITERIA_TYPES } from '../shared/grader-types.js';
import { isObject } from '../shared/json.js';

type Loc = (string | number)[];

/** OpenAI's metadata limits: at most 16 keys, keys up to 64 characters, string values up to 512. */
export function metadataIssues(value: unknown, loc: Loc): ValidationIssue[] {
  if (value === undefined || value === null) return [];
  if (!isObject(value)) return [{ loc, msg: 'metadata must be an object of strings', type: 'object' }];
  const issues: ValidationIssue[] = [];
  const keys = Object.keys(value);
  if (keys.length > 16) {
    issues.push({ loc, msg: `metadata has ${keys.length} keys; at most 16 are allowed`, type: 'too_long' });
  }
  for (const key of keys) {
    if (key.length > 64) {
      issues.push({ loc: [...loc, key], msg: 'metadata keys are at most 64 characters', type: 'too_long' });
    }
    const v = value[key];
    if (typeof v !== 'string') {
      issues.push({ loc: [...loc, key], msg: 'metadata values must be strings', type: 'string' });
    } else if (v.length > 512) {
      issues.push({
        loc: [...loc, key],
        msg: 'metadata values are at most 512 characters',
        type: 'too_long',
      });
    }
  }
  return issues;
}

function nameIssues(value: unknown, loc: Loc): ValidationIssue[] {
  if (value === undefined) return [];
  if (typeof value !== 'string' || value.length > 256) {
    return [{ loc, msg: 'name must be a string of at most 256 characters', type: 'string' }];
  }
  return [];
}

/** Made on first use, not at start. */
let instance: Ajv | null = null;
const ajv = (): Ajv => (instance ??= new Ajv({ allErrors: true, strict: false }));

/** Whether an item schema is a JSON schema that compiles. */
function schemaIssue(schema: unknown, loc: Loc): ValidationIssue[] {
  if (!isObject(schema)) return [{ loc, msg: 'item_schema must be a JSON schema object', type: 'object' }];
  try {
    ajv().compile(schema);
    return [];
  } catch (err) {
    return [
      { loc, msg: `item_schema is not a valid JSON schema: ${(err as Error).message}`, type: 'schema' },
    ];
  }
}

function configIssues(config: unknown): ValidationIssue[] {
  const loc: Loc = ['body', 'data_source_config'];
  if (config === undefined) return [{ loc, msg: 'Field required', type: 'missing' }];
  if (!isObject(config)) return [{ loc, msg: 'data_source_config must be an object', type: 'object' }];
  const types = ['custom', 'logs', 'stored_completions'];
  if (typeof config.type !== 'string' || !types.includes(config.type)) {
    return [{ loc: [...loc, 'type'], msg: `type must be one of ${types.join(', ')}`, type: 'enum' }];
  }
  const allowed =
    config.type === 'custom' ? ['type', 'item_schema', 'include_sample_schema'] : ['type', 'metadata'];
  const issues: ValidationIssue[] = Object.keys(config)
    .filter((k) => !allowed.includes(k))
    .map((k) => ({
      loc: [...loc, k],
      msg: `Not allowed for a ${config.type} config`,
      type: 'extra_forbidden',
    }));
  if (config.type === 'custom') {
    if (config.item_schema === undefined) {
      issues.push({ loc: [...loc, 'item_schema'], msg: 'Field required', type: 'missing' });
    } else issues.push(...schemaIssue(config.item_schema, [...loc, 'item_schema']));
    const inc = config.include_sample_schema;
    if (inc !== undefined && typeof inc !== 'boolean') {
      issues.push({ loc: [...loc, 'include_sample_schema'], msg: 'must be a boolean', type: 'boolean' });
    }
  } else {
    issues.push(...metadataIssues(config.metadata, [...loc, 'metadata']));
  }
  return issues;
}

/** Every problem of an eval creation body, located in the body. */
export function createIssues(body: unknown): ValidationIssue[] {
  if (!isObject(body)) return [{ loc: ['body'], msg: 'The body must be a JSON object', type: 'object' }];
  const issues: ValidationIssue[] = [...configIssues(body.data_source_config)];
  const criteria = body.testing_criteria;
  if (!Array.isArray(criteria)) {
    issues.push({
      loc: ['body', 'testing_criteria'],
      msg: 'Field required: a list of graders',
      type: 'missing',
    });
  } else {
    if (criteria.length === 0 || criteria.length > 50) {
      issues.push({
        loc: ['body', 'testing_criteria'],
        msg: 'Give 1 to 50 testing criteria',
        type: 'length',
      });
    }
    criteria.forEach((c, i) => {
      issues.push(...graderIssues(c, ['body', 'testing_criteria', i], CRITERIA_TYPES));
    });
  }
  issues.push(...metadataIssues(body.metadata, ['body', 'metadata']));
  issues.push(...nameIssues(body.name, ['body', 'name']));
  const known = ['data_source_config', 'testing_criteria', 'metadata', 'name'];
  for (const k of Object.keys(body)) {
    if (!known.includes(k))
      issues.push({ loc: ['body', k], msg: 'Extra field not allowed', type: 'extra_forbidden' });
  }
  return issues;
}

export function updateIssues(body: unknown): ValidationIssue[] {
  if (!isObject(body)) return [{ loc: ['body'], msg: 'The body must be a JSON object', type: 'object' }];
  const issues = [
    ...metadataIssues(body.metadata, ['body', 'metadata']),
    ...nameIssues(body.name, ['body', 'name']),
  ];
  for (const k of Object.keys(body)) {
    if (k !== 'metadata' && k !== 'name') {
      issues.push({
        loc: ['body', k],
        msg: 'Only name and metadata can be updated',
        type: 'extra_forbidden',
      });
    }
  }
  return issues;
}

/** A compiled item schema: the first problems of an item, as messages (empty when it is valid). */
export function itemChecker(schema: Record<string, unknown>): (item: unknown) => string[] {
  const validate = ajv().compile(schema);
  return (item) => {
    if (validate(item)) return [];
    return (validate.errors ?? []).map((e) => `${e.instancePath || '(item)'} ${e.message ?? 'is invalid'}`);
  };
}
