import { compile, referencesIn, TemplateCache, type Vocabulary } from '../scoring/template.js';

/**
 * Stored prompts' vocabulary of the one template engine (`scoring/template.ts`): `{{name}}` references a
 * variable, each declared with a type (`string`, `number`, `boolean`, `json`; undeclared ones are strings).
 * Strict: a variable without a value, or with a value of another type, is an error naming it. Pure (no
 * I/O): the server renders with it, and the TypeScript client compiles a fetched prompt with it locally.
 */
export const VARIABLE_TYPES = ['string', 'number', 'boolean', 'json'] as const;
export type VariableType = (typeof VARIABLE_TYPES)[number];

/** A variable's name: what `{{…}}` may hold (surrounding spaces allowed). */
export const VARIABLE_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;
const REFERENCE = /\{\{\s*([A-Za-z_][A-Za-z0-9_]*)\s*\}\}/g;

/** A chat message of a prompt version: its text content holds the references. */
export interface PromptMessage {
  role: string;
  content: string;
  [field: string]: unknown;
}

/** Why a prompt could not be rendered: one problem per variable. */
export interface VariableProblem {
  variable: string;
  kind: 'missing' | 'wrong_type';
  message: string;
}

export class PromptVariableError extends Error {
  override name = 'PromptVariableError';
  constructor(readonly problems: VariableProblem[]) {
    super(problems.map((p) => p.message).join('; '));
  }
}

/**
 * How a value is written: a string as it is, a number and a boolean as JSON writes them, a `json`
 * variable as JSON text (a string value of a `json` variable is taken as already written).
 */
export function writeValue(type: VariableType, value: unknown): string {
  if (type === 'json') return typeof value === 'string' ? value : JSON.stringify(value);
  return String(value);
}

/**
 * The value as its declared type wants it, or a problem. With `fromText` (the Responses API sends every
 * variable as a string) a number's or a boolean's text is read as one.
 */
export function checkValue(
  name: string,
  type: VariableType,
  value: unknown,
  fromText = false,
): { value: unknown } | VariableProblem {
  const wrong = (want: string): VariableProblem => ({
    variable: name,
    kind: 'wrong_type',
    message: `variable '${name}' must be ${want}, got ${value === null ? 'null' : typeof value}`,
  });
  if (value === undefined) {
    return { variable: name, kind: 'missing', message: `variable '${name}' has no value` };
  }
  switch (type) {
    case 'string':
      return typeof value === 'string' ? { value } : wrong('a string');
    case 'number': {
      const n = fromText && typeof value === 'string' && value.trim() !== '' ? Number(value) : value;
      return typeof n === 'number' && Number.isFinite(n) ? { value: n } : wrong('a finite number');
    }
    case 'boolean': {
      const b = fromText && (value === 'true' || value === 'false') ? value === 'true' : value;
      return typeof b === 'boolean' ? { value: b } : wrong('a boolean');
    }
    case 'json':
      return { value };
  }
}

type Values = Readonly<Record<string, string>>;

/** Prompts' vocabulary: the value's text, already checked and written (a strict vocabulary: none throws). */
const PROMPT: Vocabulary<Values, string> = {
  pattern: REFERENCE,
  parse: (reference) => reference.trim(),
  write: (name, values) => {
    const text = values[name];
    if (text === undefined) throw new PromptVariableError([missing(name)]);
    return text;
  },
};

const missing = (name: string): VariableProblem => ({
  variable: name,
  kind: 'missing',
  message: `variable '${name}' has no value`,
});

const cache = new TemplateCache(PROMPT, 512);

/** The variables a text references, in order of first use. */
export function variablesOf(text: string): string[] {
  return [...new Set(referencesIn(text, REFERENCE))];
}

/** The variables of every message, in order of first use. */
export function variablesOfMessages(messages: readonly PromptMessage[]): string[] {
  return [...new Set(messages.flatMap((m) => variablesOf(m.content)))];
}

/** One text rendered at written values (every reference must have one). */
export function renderText(text: string, written: Values): string {
  return cache.get(text)(written);
}

/** A template compiled once, for a caller that renders the same text many times. */
export function compileText(text: string): (written: Values) => string {
  return compile(text, PROMPT);
}

/**
 * Every variable the messages use checked against its declared type and written as text; throws a
 * `PromptVariableError` listing every missing or mistyped variable at once.
 */
export function writeVariables(
  messages: readonly PromptMessage[],
  declared: Readonly<Record<string, VariableType>>,
  values: Readonly<Record<string, unknown>>,
  fromText = false,
): Record<string, string> {
  const problems: VariableProblem[] = [];
  const written: Record<string, string> = {};
  const used = variablesOfMessages(messages);
  for (const name of used) {
    const type = declared[name] ?? 'string';
    const checked = checkValue(name, type, values[name], fromText);
    if ('kind' in checked) problems.push(checked);
    else written[name] = writeValue(type, checked.value);
  }
  // A value given for a declared variable the messages do not use is still checked against its type.
  for (const [name, type] of Object.entries(declared)) {
    if (used.includes(name) || values[name] === undefined) continue;
    const checked = checkValue(name, type, values[name], fromText);
    if ('kind' in checked) problems.push(checked);
  }
  if (problems.length > 0) throw new PromptVariableError(problems);
  return written;
}

/** The messages rendered at `values` (checked against `declared`); throws `PromptVariableError`. */
export function renderMessages(
  messages: readonly PromptMessage[],
  declared: Readonly<Record<string, VariableType>>,
  values: Readonly<Record<string, unknown>>,
): PromptMessage[] {
  const written = writeVariables(messages, declared, values);
  return messages.map((m) => ({ ...m, content: renderText(m.content, written) }));
}
