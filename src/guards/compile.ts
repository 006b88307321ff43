import type { ValidationIssue } from '../shared/errors.js';
import { compileSchema, jsonSchemaGuard } from './builtins/json-schema.js';
import { piiGuard } from './builtins/pii.js';
import { secretsGuard } from './builtins/secrets.js';
import {
  compileRegex,
  denyListGuard,
  injectionGuard,
  languageGuard,
  lengthGuard,
  regexGuard,
} from './builtins/text-rules.js';
import type { TextGuard } from './builtins/types.js';
import type { GuardCheck, GuardCheckInput, GuardSpec } from './schemas.js';

/*
 * The guard registry: a built-in kind → its compiled guard. A new built-in is one file in builtins/ plus
 * its line here; `evaluator` checks are not compiled (they are looked up per project and run as scores).
 */

type BuiltIn = Exclude<GuardSpec, { type: 'evaluator' }>;

const BUILT_INS: { [K in BuiltIn['type']]: (config: Extract<BuiltIn, { type: K }>) => TextGuard } = {
  pii: piiGuard,
  secrets: secretsGuard,
  deny_list: denyListGuard,
  regex: regexGuard,
  json_schema: (c) => jsonSchemaGuard({ schema: c.schema }),
  prompt_injection: injectionGuard,
  language: languageGuard,
  length: lengthGuard,
};

/** Kinds that can say what to replace (`action: redact`). */
const REDACTING = new Set<GuardSpec['type']>(['pii', 'secrets', 'deny_list', 'regex']);

export function compileGuard(spec: BuiltIn): TextGuard {
  return (BUILT_INS[spec.type] as (c: BuiltIn) => TextGuard)(spec);
}

/** Whether a guard can judge a prefix of a text (a finding in a prefix stays a finding). */
export function judgesPrefix(spec: GuardSpec): boolean {
  if (spec.type === 'length') return spec.min_chars === undefined && spec.min_tokens === undefined;
  return PREFIX.has(spec.type);
}

const PREFIX = new Set<GuardSpec['type']>(['pii', 'secrets', 'deny_list', 'regex', 'prompt_injection']);

/** What the default of a check's `streaming` is: judged as it goes when the guard can judge a prefix. */
function defaultStreaming(spec: GuardSpec): GuardCheck['streaming'] {
  return judgesPrefix(spec) ? 'incremental' : 'hold';
}

/** A check with its defaults filled in. */
export function withDefaults(c: GuardCheckInput): GuardCheck {
  return {
    name: c.name,
    guard: c.guard,
    stage: c.stage ?? 'input',
    action: c.action ?? 'block',
    timeout_ms: c.timeout_ms ?? (c.guard.type === 'evaluator' ? 30_000 : 1_000),
    on_error: c.on_error ?? 'open',
    streaming: c.streaming ?? defaultStreaming(c.guard),
  };
}

/** Every problem of a policy's checks that the schema cannot see, each at its place in the body. */
export function checkIssues(checks: GuardCheckInput[]): ValidationIssue[] {
  const issues: ValidationIssue[] = [];
  const names = new Set<string>();
  checks.forEach((c, i) => {
    const at = (...rest: (string | number)[]) => ['body', 'checks', i, ...rest];
    if (names.has(c.name))
      issues.push({ loc: at('name'), msg: `check name '${c.name}' is used twice`, type: 'value_error' });
    names.add(c.name);
    const g = c.guard;
    if (c.action === 'redact' && c.stage === 'parallel') {
      issues.push({
        loc: at('action'),
        msg: 'a parallel check cannot redact (the request has already gone upstream); use an input check',
        type: 'value_error',
      });
    } else if (c.action === 'redact' && !REDACTING.has(g.type)) {
      issues.push({
        loc: at('action'),
        msg: `a '${g.type}' guard cannot redact (it cannot say what to replace); use block or flag`,
        type: 'value_error',
      });
    }
    if (g.type === 'regex') {
      const re = compileRegex(g.pattern, g.case_insensitive === true);
      if (typeof re === 'string')
        issues.push({
          loc: at('guard', 'pattern'),
          msg: `the pattern does not compile: ${re}`,
          type: 'regex',
        });
    }
    if (g.type === 'json_schema') {
      const v = compileSchema(g.schema);
      if (typeof v === 'string')
        issues.push({ loc: at('guard', 'schema'), msg: `invalid JSON Schema: ${v}`, type: 'schema' });
      if (c.stage !== 'output')
        issues.push({
          loc: at('stage'),
          msg: 'a json_schema guard checks the answer: stage must be output',
          type: 'value_error',
        });
    }
    if (g.type === 'length') {
      if (g.min_chars !== undefined && g.max_chars !== undefined && g.min_chars > g.max_chars)
        issues.push({ loc: at('guard'), msg: 'min_chars is above max_chars', type: 'value_error' });
      if (g.min_tokens !== undefined && g.max_tokens !== undefined && g.min_tokens > g.max_tokens)
        issues.push({ loc: at('guard'), msg: 'min_tokens is above max_tokens', type: 'value_error' });
    }
    if (c.streaming === 'incremental' && !judgesPrefix(g)) {
      issues.push({
        loc: at('streaming'),
        msg: `a '${g.type}' guard cannot judge a prefix of the answer: streaming must be hold`,
        type: 'value_error',
      });
    }
  });
  return issues;
}
