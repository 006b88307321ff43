import { Ajv, type ErrorObject, type Options, type ValidateFunction } from 'ajv';
import addFormatsModule from 'ajv-formats';
import type { FastifySchemaCompiler } from 'fastify';
import type { ValidationIssue } from '../shared/errors.js';

// ajv-formats ships CommonJS; under NodeNext its default export is the module object.
const addFormats = addFormatsModule as unknown as (ajv: Ajv) => Ajv;

// strictNumbers: Infinity (e.g. from 1e400) and NaN are not numbers here; they cannot be stored or serialized.
const common: Options = {
  allErrors: true,
  strict: false,
  strictNumbers: true,
  removeAdditional: false,
  useDefaults: true,
};

/**
 * `format: 'position-range'`: a `start:end` range whose bounds are exact integers (at most 2^53 - 1), so
 * that it is stored and echoed as sent, never as `1e+23`. Text that is not `digits:digits` passes here
 * and is left to the schema's pattern, so one mistake is reported once.
 */
export const POSITION_RANGE_FORMAT = 'position-range';

function isPositionRange(text: string): boolean {
  const m = /^(\d+):(\d+)$/.exec(text);
  return m === null || (Number.isSafeInteger(Number(m[1])) && Number.isSafeInteger(Number(m[2])));
}

function withOwnFormats(ajv: Ajv): Ajv {
  return ajv.addFormat(POSITION_RANGE_FORMAT, { type: 'string', validate: isPositionRange });
}

/**
 * Bodies are checked strictly; query strings, paths and headers are text, so they are coerced. Each
 * instance is made on the first schema it compiles, not at start.
 */
let strict: Ajv | null = null;
let coercing: Ajv | null = null;

function ajvFor(httpPart: string | undefined): Ajv {
  if (httpPart === 'body') {
    strict ??= withOwnFormats(addFormats(new Ajv({ ...common, coerceTypes: false })));
    return strict;
  }
  coercing ??= withOwnFormats(addFormats(new Ajv({ ...common, coerceTypes: 'array' })));
  return coercing;
}

/** Parsed data: plain objects, and the prototype-less dictionaries query-string and path parsers make. */
function isPlainObject(value: object): boolean {
  const proto = Object.getPrototypeOf(value);
  return proto === Object.prototype || proto === null || Object.getPrototypeOf(proto) === null;
}

/** A JSON pointer from the keys on the way down. */
function pointerOf(path: readonly string[]): string {
  return path.map((k) => `/${k.replace(/~/g, '~0').replace(/\//g, '~1')}`).join('');
}

/** No lone UTF-16 surrogate (`"\ud800"` in JSON): UTF-8, and so both databases, cannot hold one. */
export function isWellFormed(text: string): boolean {
  // String.prototype.isWellFormed (Node 20) is not in the ES2023 lib; it answers at once for one-byte strings.
  return (text as unknown as { isWellFormed(): boolean }).isWellFormed();
}

/** The keywords of the errors `unstorable` reports (values no database stores as sent). */
const UNSTORABLE_KEYWORDS = ['nul', 'surrogate', 'finite'] as const;
const unstorableKeywords: ReadonlySet<string> = new Set(UNSTORABLE_KEYWORDS);

/** Whether a validation error is one of `unstorable`'s: U+0000, a lone surrogate, a non-finite number. */
export function isUnstorableError(error: { keyword: string }): boolean {
  return unstorableKeywords.has(error.keyword);
}

/**
 * Values no database stores faithfully, found anywhere in an input: U+0000 in a string or key
 * (PostgreSQL text cannot hold it), lone surrogates (stored as U+FFFD, or refused by PostgreSQL's
 * jsonb) and non-finite numbers (ajv's coercion turns "1e400" into Infinity without applying
 * `strictNumbers`). Returns ajv-style errors at their JSON pointers; `path` is the way down so far,
 * turned into a pointer only for a value that fails (the walk builds no strings).
 */
function unstorable(value: unknown, path: string[], out: ErrorObject[]): ErrorObject[] {
  const fail = (keyword: (typeof UNSTORABLE_KEYWORDS)[number]) => {
    out.push({ keyword, instancePath: pointerOf(path), schemaPath: '#', params: {} });
  };
  if (typeof value === 'string') {
    if (value.includes('\u0000')) fail('nul');
    else if (!isWellFormed(value)) fail('surrogate');
  } else if (typeof value === 'number') {
    if (!Number.isFinite(value)) fail('finite');
  } else if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i++) {
      path.push(String(i));
      unstorable(value[i], path, out);
      path.pop();
    }
  } else if (value !== null && typeof value === 'object' && isPlainObject(value)) {
    // Only parsed JSON is walked (nested at most MAX_JSON_DEPTH); streams and other objects are not data.
    for (const [k, v] of Object.entries(value)) {
      path.push(k);
      if (k.includes('\u0000')) fail('nul');
      else if (!isWellFormed(k)) fail('surrogate');
      else unstorable(v, path, out);
      path.pop();
    }
  }
  return out;
}

type Validator = ((data: unknown, ctx?: unknown) => boolean) & {
  errors?: ErrorObject[] | null;
  schemaEnv?: unknown;
};

/**
 * A query string schema that says nothing about other parameters refuses them: a misspelled filter
 * (`?stauts=error`) must answer 422, not silently widen a listing. Routes without a query schema (the
 * OpenAI-compatible ones among them) ignore the query string; a schema may opt out with
 * `additionalProperties: true`.
 */
function closedQuery(schema: object, httpPart: string | undefined): object {
  if (httpPart !== 'querystring') return schema;
  const s = schema as { type?: unknown; additionalProperties?: unknown };
  if (s.type !== 'object' || s.additionalProperties !== undefined) return schema;
  return { ...schema, additionalProperties: false };
}

/**
 * Ajv's validator, plus one rule for every input of every route: nothing `unstorable`, so that SQLite
 * and PostgreSQL accept exactly the same requests and every accepted value reads back as it was sent.
 */
export const validatorCompiler: FastifySchemaCompiler<unknown> = ({ schema, httpPart }) => {
  // Compiled on the route's first request, not at start (compiling every route's schemas was a third of
  // a start's CPU). A schema ajv refuses then fails that request with a 500, which the fuzz test (every
  // documented route, every part of its input) and the contract test would report.
  let validate: ValidateFunction | null = null;
  const checked: Validator = (data, ctx) => {
    validate ??= ajvFor(httpPart).compile(closedQuery(schema as object, httpPart));
    if (!validate(data, ctx as never)) {
      checked.errors = validate.errors ?? null;
      return false;
    }
    const errors = unstorable(data, [], []);
    checked.errors = errors.length ? errors : null;
    return errors.length === 0;
  };
  // Fastify passes the parent object to validators that have a schemaEnv, so root values can be coerced:
  // every validator here takes it (ajv's compiled functions accept the parent as their second argument).
  checked.schemaEnv = true;
  return checked;
};

const PART: Record<string, string> = {
  body: 'body',
  querystring: 'query',
  params: 'path',
  headers: 'header',
};

function describe(e: ErrorObject): { msg: string; type: string; extra?: string } {
  const p = e.params as Record<string, unknown>;
  switch (e.keyword) {
    case 'required':
      return { msg: 'Field required', type: 'missing', extra: String(p.missingProperty) };
    case 'additionalProperties':
      return {
        msg: 'Extra inputs are not permitted',
        type: 'extra_forbidden',
        extra: String(p.additionalProperty),
      };
    case 'type':
      return {
        msg: `Input should be of type ${String(p.type).replace(',', ' or ')}`,
        type: `${p.type}_type`,
      };
    case 'minimum':
      return { msg: `Input should be greater than or equal to ${p.limit}`, type: 'greater_than_equal' };
    case 'maximum':
      return { msg: `Input should be less than or equal to ${p.limit}`, type: 'less_than_equal' };
    case 'minLength':
      return { msg: `String should have at least ${p.limit} character(s)`, type: 'string_too_short' };
    case 'maxLength':
      return { msg: `String should have at most ${p.limit} character(s)`, type: 'string_too_long' };
    case 'minItems':
      return { msg: `List should have at least ${p.limit} item(s)`, type: 'too_short' };
    case 'maxItems':
      return { msg: `List should have at most ${p.limit} item(s)`, type: 'too_long' };
    case 'pattern':
      return { msg: `String should match pattern '${p.pattern}'`, type: 'string_pattern_mismatch' };
    case 'enum':
    case 'const': {
      const allowed = (p.allowedValues as unknown[] | undefined) ?? [p.allowedValue];
      return { msg: `Input should be ${allowed.map((v) => JSON.stringify(v)).join(' or ')}`, type: 'enum' };
    }
    case 'format':
      if (p.format === POSITION_RANGE_FORMAT) {
        return {
          msg: `Range bounds must be at most ${Number.MAX_SAFE_INTEGER} (2^53 - 1)`,
          type: 'less_than_equal',
        };
      }
      return { msg: `Input should be a valid ${p.format}`, type: 'format' };
    case 'nul':
      return { msg: 'String must not contain NUL (\\u0000) characters', type: 'string_nul' };
    case 'surrogate':
      return {
        msg: 'String must not contain unpaired UTF-16 surrogates (e.g. \\ud800 without its pair)',
        type: 'string_unicode',
      };
    case 'finite':
      return { msg: 'Input should be a finite number', type: 'finite_number' };
    case 'anyOf':
    case 'oneOf':
      return { msg: 'Input does not match any allowed shape', type: 'union' };
    default:
      return { msg: e.message ?? 'Invalid value', type: e.keyword };
  }
}

function pointer(instancePath: string): (string | number)[] {
  if (instancePath === '') return [];
  return instancePath
    .slice(1)
    .split('/')
    .map((s) => s.replace(/~1/g, '/').replace(/~0/g, '~'))
    .map((s) => (/^\d+$/.test(s) ? Number(s) : s));
}

const isUnion = (e: ErrorObject) => e.keyword === 'anyOf' || e.keyword === 'oneOf';

/**
 * Turns ajv errors into 422 entries. Errors inside a union (anyOf) are collapsed into one entry at the
 * union's location, since listing every failed branch would only confuse.
 */
export function toIssues(part: string, errors: readonly ErrorObject[]): ValidationIssue[] {
  const loc0 = PART[part] ?? part;
  const seen = new Set<string>();
  const issues: ValidationIssue[] = [];
  const push = (e: ErrorObject, override?: { msg: string; type: string }) => {
    const described = describe(e);
    const { msg, type } = override ?? described;
    const loc: (string | number)[] = [loc0, ...pointer(e.instancePath)];
    if (described.extra !== undefined) loc.push(described.extra);
    const key = `${loc.join('\u0000')}|${type}`;
    if (seen.has(key)) return;
    seen.add(key);
    issues.push({ loc, msg, type });
  };
  // Unions nest (a nullable field inside a nullable object): the same collapse applies at every level.
  const collapse = (errs: readonly ErrorObject[]) => {
    const unions = errs.filter(isUnion).map((e) => e.schemaPath);
    for (const e of errs) {
      if (unions.some((u) => e.schemaPath.startsWith(`${u}/`))) continue;
      if (isUnion(e)) {
        const inner = errs.filter((i) => i.schemaPath.startsWith(`${e.schemaPath}/`));
        const typeErrors = inner.filter((i) => i.keyword === 'type' && i.instancePath === e.instancePath);
        const others = inner.filter((i) => !typeErrors.includes(i));
        if (others.length === 0 && typeErrors.length > 0) {
          // A plain type mismatch against every branch (e.g. a nullable number given a string).
          const types = [...new Set(typeErrors.map((i) => String((i.params as { type: unknown }).type)))];
          push(e, { msg: `Input should be of type ${types.join(' or ')}`, type: `${types[0]}_type` });
        } else if (others.length > 0) {
          // The value had the right type for a branch but broke that branch's rules: report those.
          collapse(others);
        } else {
          push(e);
        }
        continue;
      }
      push(e);
    }
  };
  collapse(errors);
  return issues;
}
