/**
 * Templates of OpenAI-style graders: `{{item.x}}`, `{{ sample.output_json.a[0] }}`,
 * `{{sample.output_tools[0].function.arguments.symbols}}`. A path may continue into a JSON string
 * (tool-call `arguments`); strings render as they are, anything else as JSON. A reference that does
 * not resolve is an error naming the reason, never an empty string.
 */

import { referencesIn, TemplateCache, type Vocabulary } from '../template.js';

export type Namespaces = Readonly<Record<string, unknown>>;

export class TemplateError extends Error {
  override name = 'TemplateError';
  constructor(
    readonly reference: string,
    readonly reason: string,
  ) {
    super(`{{${reference}}} does not resolve: ${reason}`);
  }
}

const REFERENCE = /\{\{\s*([^{}]*?)\s*\}\}/g;
const SEGMENT =
  /^(?:\.?([A-Za-z_$][\w$-]*)|\[\s*(\d+)\s*\]|\[\s*"((?:[^"\\]|\\.)*)"\s*\]|\[\s*'([^']*)'\s*\])/;

type Key = string | number;

/** The keys of a reference path (`item.a[0]["b c"]`), or null when it is not a path. */
export function parsePath(reference: string): Key[] | null {
  const keys: Key[] = [];
  let rest = reference.trim();
  let first = true;
  while (rest.length > 0) {
    const m = SEGMENT.exec(rest);
    if (
      !m ||
      (first && (m[1] === undefined || rest.startsWith('.'))) ||
      (!first && m[1] !== undefined && !rest.startsWith('.'))
    ) {
      return null;
    }
    if (m[1] !== undefined) keys.push(m[1]);
    else if (m[2] !== undefined) keys.push(Number(m[2]));
    else keys.push(m[3] !== undefined ? (JSON.parse(`"${m[3]}"`) as string) : (m[4] ?? ''));
    rest = rest.slice(m[0].length);
    first = false;
  }
  return keys.length ? keys : null;
}

function describe(keys: Key[]): string {
  return keys.map((k, i) => (typeof k === 'number' ? `[${k}]` : i === 0 ? k : `.${k}`)).join('');
}

/** The value a reference names; throws TemplateError when it does not resolve. */
export function resolve(reference: string, namespaces: Namespaces): unknown {
  return resolveKeys(reference, parsePath(reference), namespaces);
}

function resolveKeys(reference: string, keys: Key[] | null, namespaces: Namespaces): unknown {
  if (!keys) throw new TemplateError(reference, 'not a path like item.name or sample.output_json.x[0]');
  const [head, ...rest] = keys;
  if (typeof head !== 'string' || !Object.hasOwn(namespaces, head)) {
    const known = Object.keys(namespaces).join(', ');
    throw new TemplateError(reference, `unknown namespace '${String(head)}' (known: ${known})`);
  }
  let current: unknown = namespaces[head];
  const walked: Key[] = [head];
  for (const key of rest) {
    if (typeof current === 'string') {
      // A path continuing into a JSON string, such as a tool call's `arguments`.
      try {
        current = JSON.parse(current);
      } catch {
        throw new TemplateError(reference, `${describe(walked)} is a string that is not JSON`);
      }
    }
    if (typeof key === 'number') {
      if (!Array.isArray(current)) {
        throw new TemplateError(reference, `${describe(walked)} is not an array`);
      }
      if (key >= current.length) {
        throw new TemplateError(reference, `${describe(walked)} has ${current.length} elements`);
      }
      current = current[key];
    } else {
      if (current === null || typeof current !== 'object' || Array.isArray(current)) {
        throw new TemplateError(reference, `${describe(walked)} is not an object`);
      }
      // Own properties only: no prototype access (`__proto__`, `constructor`).
      if (!Object.hasOwn(current, key)) {
        throw new TemplateError(reference, `${describe(walked)} has no field '${key}'`);
      }
      current = (current as Record<string, unknown>)[key];
    }
    walked.push(key);
  }
  if (current === undefined) throw new TemplateError(reference, `${describe(walked)} is undefined`);
  return current;
}

/** A value as template text: strings as they are, anything else (null, numbers, objects) as JSON. */
export function asTemplateText(value: unknown): string {
  return typeof value === 'string' ? value : JSON.stringify(value);
}

/** Graders' vocabulary: any `{{…}}` is a path into the namespaces, and must resolve. */
const GRADER: Vocabulary<Namespaces, Key[] | null> = {
  pattern: REFERENCE,
  parse: parsePath,
  write: (keys, namespaces, reference) => asTemplateText(resolveKeys(reference, keys, namespaces)),
};
const compiled = new TemplateCache(GRADER);

/** Renders every `{{reference}}` of a template; throws TemplateError on the first that does not resolve. */
export function renderTemplate(template: string, namespaces: Namespaces): string {
  return compiled.get(template)(namespaces);
}

/** The references a template makes, e.g. to validate them before any item is seen. */
export function referencesOf(template: string): string[] {
  return referencesIn(template, REFERENCE);
}
