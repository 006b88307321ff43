import type { ToolStepValues } from '../../catalog/items.js';
import { compile, referencesIn, type Vocabulary } from '../template.js';

/** Values a judge prompt can reference: {{input}}, {{output}}, {{expected}}, {{baseline}}, {{metadata.key}}. */
export interface TemplateValues {
  input: unknown;
  output: unknown;
  expected: unknown;
  baseline?: unknown;
  output_a?: unknown;
  output_b?: unknown;
  metadata: Record<string, unknown>;
  /** A session's (sessions as a run source): rendered turns, tool calls, last answer, first question. */
  conversation?: string;
  trajectory?: string;
  final_output?: string;
  first_input?: string;
  /** A tool step's (tool steps as a run source): `{{tool_step.name}}`, `.arguments`, `.result`, `.turn`. */
  tool_step?: ToolStepValues;
}

const VARIABLE = /\{\{\s*([A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z0-9_-]+)*)\s*\}\}/g;

/** Text as a judge should read it: strings as they are, message lists as "role: content" lines, the rest as JSON. */
export function asText(value: unknown): string {
  if (value === null || value === undefined) return '';
  if (typeof value === 'string') return value;
  if (Array.isArray(value) && value.every((m) => m && typeof m === 'object' && 'role' in m)) {
    return value
      .map((m: { role: unknown; content?: unknown }) => `${String(m.role)}: ${asText(m.content)}`)
      .join('\n');
  }
  return JSON.stringify(value);
}

function lookup(values: TemplateValues, path: readonly string[]): unknown {
  let current: unknown = (values as unknown as Record<string, unknown>)[path[0] ?? ''];
  for (let i = 1; i < path.length; i++) {
    if (current === null || typeof current !== 'object') return undefined;
    current = (current as Record<string, unknown>)[path[i] ?? ''];
  }
  return current;
}

/** Judge prompts' vocabulary: a dotted path into the values; what does not resolve writes as ''. */
const JUDGE: Vocabulary<TemplateValues, string[]> = {
  pattern: VARIABLE,
  parse: (reference) => reference.split('.'),
  write: (path, values) => asText(lookup(values, path)),
};

export function render(template: string, values: TemplateValues): string {
  return compileTemplate(template)(values);
}

/**
 * A template split once into its text and its variables, for a judge that renders it at every position:
 * `compileTemplate(t)(values)` is `render(t, values)` without matching the template again each time.
 */
export function compileTemplate(template: string): (values: TemplateValues) => string {
  return compile(template, JUDGE);
}

/** Templates seen recently and their variables: runs ask for the same few templates at every position. */
const seen = new Map<string, ReadonlySet<string>>();

/** The variables a template uses, e.g. to tell whether a judge needs `expected`. */
export function variablesOf(template: string): ReadonlySet<string> {
  let vars = seen.get(template);
  if (!vars) {
    vars = new Set(referencesIn(template, VARIABLE).map((r) => r.split('.')[0] ?? ''));
    if (seen.size >= 256) seen.clear();
    seen.set(template, vars);
  }
  return vars;
}

/** What a judge cannot do without: the item's input and the metadata its prompt names (e.g. a RAG context). */
const REQUIRED_ROOTS = new Set(['input', 'metadata']);

/**
 * The variables of `template` (among the input and metadata paths) that have no value at a position: a
 * judge asked with them blank would score a prompt that says nothing, so the position is missing instead.
 */
export function missingVariables(template: string, values: TemplateValues): string[] {
  const missing: string[] = [];
  for (const reference of referencesIn(template, VARIABLE)) {
    const path = reference.split('.');
    if (!REQUIRED_ROOTS.has(path[0] ?? '')) continue;
    const value = lookup(values, path);
    if (value === null || value === undefined || value === '') missing.push(reference);
  }
  return missing;
}
