import type { TSchema } from 'typebox';
import { Value } from 'typebox/value';
import type { ValidationIssue } from '../../shared/errors.js';
import { CRITERIA_TYPES } from '../../shared/grader-types.js';
import { FormulaError, parseFormula } from './formula.js';
import { subGradersOf } from './grade.js';
import { GRADER_TYPES, type Grader, type GraderType, type ModelInput, SCHEMA_OF } from './schemas.js';
import { parsePath, referencesOf } from './template.js';

type Loc = (string | number)[];

function locOf(base: Loc, pointer: string): Loc {
  if (!pointer) return base;
  return [
    ...base,
    ...pointer
      .slice(1)
      .split('/')
      .map((k) => k.replace(/~1/g, '/').replace(/~0/g, '~'))
      .map((k) => (/^\d+$/.test(k) ? Number(k) : k)),
  ];
}

function schemaIssues(schema: TSchema, value: unknown, loc: Loc): ValidationIssue[] {
  const issues: ValidationIssue[] = [];
  for (const e of Value.Errors(schema, value)) {
    // A false sub-schema repeats what additionalProperties says with the field's name.
    if (e.keyword === 'boolean') continue;
    if (e.keyword === 'additionalProperties') {
      for (const field of (e.params as { additionalProperties?: string[] }).additionalProperties ?? []) {
        issues.push({
          loc: [...locOf(loc, e.instancePath), field],
          msg: 'Extra field not allowed',
          type: 'extra_forbidden',
        });
      }
      continue;
    }
    if (e.keyword === 'required') {
      for (const field of (e.params as { requiredProperties?: string[] }).requiredProperties ?? []) {
        issues.push({ loc: [...locOf(loc, e.instancePath), field], msg: 'Field required', type: 'missing' });
      }
      continue;
    }
    issues.push({ loc: locOf(loc, e.instancePath), msg: e.message, type: e.keyword });
  }
  return issues;
}

function templateIssues(text: string, loc: Loc): ValidationIssue[] {
  const issues: ValidationIssue[] = [];
  for (const ref of referencesOf(text)) {
    const keys = parsePath(ref);
    if (!keys) {
      issues.push({
        loc,
        msg: `{{${ref}}} is not a path like item.name or sample.output_text`,
        type: 'template',
      });
    } else if (keys[0] !== 'item' && keys[0] !== 'sample') {
      issues.push({ loc, msg: `{{${ref}}} must start with item or sample`, type: 'template' });
    }
  }
  return issues;
}

function inputIssues(input: readonly ModelInput[], loc: Loc): ValidationIssue[] {
  return input.flatMap((m, i) => {
    const parts =
      typeof m.content === 'string' ? [m.content] : Array.isArray(m.content) ? m.content : [m.content];
    return parts.flatMap((p, j) => {
      const at = [...loc, i, 'content', ...(typeof m.content === 'string' ? [] : [j])];
      if (typeof p === 'string') return templateIssues(p, at);
      if (p.type === 'input_text' || p.type === 'output_text') return templateIssues(p.text, [...at, 'text']);
      return [];
    });
  });
}

/** Checks beyond the schema: templates, ranges, labels, formulas. `grader` already matches its schema. */
function ruleIssues(grader: Grader, loc: Loc): ValidationIssue[] {
  switch (grader.type) {
    case 'string_check':
    case 'text_similarity':
      return [
        ...templateIssues(grader.input, [...loc, 'input']),
        ...templateIssues(grader.reference, [...loc, 'reference']),
      ];
    case 'score_model': {
      const issues = inputIssues(grader.input, [...loc, 'input']);
      const [min, max] = grader.range ?? [0, 1];
      if (grader.range && !((min as number) < (max as number))) {
        issues.push({
          loc: [...loc, 'range'],
          msg: 'range must be [min, max] with min < max',
          type: 'value_error',
        });
      }
      return issues;
    }
    case 'label_model': {
      const issues = inputIssues(grader.input, [...loc, 'input']);
      if (grader.labels.length === 0) {
        issues.push({
          loc: [...loc, 'labels'],
          msg: 'labels must name at least one label',
          type: 'value_error',
        });
      }
      grader.passing_labels.forEach((label, i) => {
        if (!grader.labels.includes(label)) {
          issues.push({
            loc: [...loc, 'passing_labels', i],
            msg: `'${label}' is not one of labels`,
            type: 'value_error',
          });
        }
      });
      if (grader.passing_labels.length === 0) {
        issues.push({
          loc: [...loc, 'passing_labels'],
          msg: 'passing_labels must name at least one label',
          type: 'value_error',
        });
      }
      return issues;
    }
    case 'python':
      return /^\s*def\s+grade\s*\(/m.test(grader.source)
        ? []
        : [{ loc: [...loc, 'source'], msg: 'source must define grade(sample, item)', type: 'value_error' }];
    case 'multi': {
      const subs = subGradersOf(grader);
      const single = typeof (grader.graders as { type?: unknown }).type === 'string';
      const issues = Object.entries(subs).flatMap(([name, sub]) =>
        ruleIssues(sub, single ? [...loc, 'graders'] : [...loc, 'graders', name]),
      );
      try {
        parseFormula(grader.calculate_output, Object.keys(subs));
      } catch (err) {
        if (!(err instanceof FormulaError)) throw err;
        issues.push({ loc: [...loc, 'calculate_output'], msg: err.message, type: 'formula' });
      }
      return issues;
    }
  }
}

/** Every problem of a grader definition, with its location under `loc`; none means `value` is a Grader. */
export function graderIssues(
  value: unknown,
  loc: Loc,
  allowed: readonly GraderType[] = GRADER_TYPES,
): ValidationIssue[] {
  const type = value && typeof value === 'object' ? (value as { type?: unknown }).type : undefined;
  if (typeof type !== 'string' || !(allowed as readonly string[]).includes(type)) {
    return [{ loc: [...loc, 'type'], msg: `type must be one of ${allowed.join(', ')}`, type: 'enum' }];
  }
  const issues = schemaIssues(SCHEMA_OF[type as GraderType], value, loc);
  if (type === 'multi' && issues.length > 0) {
    // The union of sub-grader shapes reports poorly: check each sub-grader against its own type.
    const graders = (value as { graders?: unknown }).graders;
    if (graders && typeof graders === 'object') {
      const single = typeof (graders as { type?: unknown }).type === 'string';
      const entries = single ? [['', graders] as const] : Object.entries(graders);
      const subIssues = entries.flatMap(([name, sub]) =>
        graderIssues(sub, name ? [...loc, 'graders', name] : [...loc, 'graders'], CRITERIA_TYPES),
      );
      const own = issues.filter((i) => i.loc[loc.length] !== 'graders');
      return [...own, ...subIssues];
    }
  }
  if (issues.length) return issues;
  return ruleIssues(value as Grader, loc);
}
