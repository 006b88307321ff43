/** Values a judge prompt can reference: {{input}}, {{output}}, {{expected}}, {{baseline}}, {{metadata.key}}. */
export interface TemplateValues {
  input: unknown;
  output: unknown;
  expected: unknown;
  baseline?: unknown;
  output_a?: unknown;
  output_b?: unknown;
  metadata: Record<string, unknown>;
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

export function render(template: string, values: TemplateValues): string {
  return compileTemplate(template)(values);
}

/**
 * A template split once into its text and its variables, for a judge that renders it at every position:
 * `compileTemplate(t)(values)` is `render(t, values)` without matching the template again each time.
 */
export function compileTemplate(template: string): (values: TemplateValues) => string {
  const texts: string[] = [];
  const paths: string[][] = [];
  let last = 0;
  for (const m of template.matchAll(VARIABLE)) {
    texts.push(template.slice(last, m.index));
    paths.push((m[1] ?? '').split('.'));
    last = m.index + m[0].length;
  }
  const tail = template.slice(last);
  return (values) => {
    let out = '';
    for (let i = 0; i < paths.length; i++) out += texts[i] + asText(lookup(values, paths[i] ?? []));
    return out + tail;
  };
}

/** Templates seen recently and their variables: runs ask for the same few templates at every position. */
const seen = new Map<string, ReadonlySet<string>>();

/** The variables a template uses, e.g. to tell whether a judge needs `expected`. */
export function variablesOf(template: string): ReadonlySet<string> {
  let vars = seen.get(template);
  if (!vars) {
    vars = new Set([...template.matchAll(VARIABLE)].map((m) => (m[1] ?? '').split('.')[0] ?? ''));
    if (seen.size >= 256) seen.clear();
    seen.set(template, vars);
  }
  return vars;
}
