import { Ajv } from 'ajv';
import { isObject } from '../../shared/json.js';

/** A tool call as trajectory graders compare them: the tool's name and its arguments (parsed JSON). */
export interface ToolCallLike {
  name: string;
  arguments?: unknown;
}

/** How the actual calls are matched with the expected ones. */
export const MATCH_MODES = ['exact', 'in_order', 'any_order', 'subset', 'superset'] as const;
export type MatchMode = (typeof MATCH_MODES)[number];

/** How a matched pair's arguments are compared: equal, expected ⊆ actual, or actual valid against a schema. */
export const ARGUMENT_MODES = ['exact', 'subset', 'schema', 'ignore'] as const;
export type ArgumentMode = (typeof ARGUMENT_MODES)[number];

export interface ToolCallMatchSpec {
  mode: MatchMode;
  arguments: ArgumentMode;
}

export interface ToolCallMatch {
  /** Matched actual calls / actual calls (1 when there are none). */
  precision: number;
  /** Matched expected calls / expected calls (1 when none are expected). */
  recall: number;
  /** Whether the trajectory satisfies the mode. */
  pass: boolean;
  matched: number;
  actual: number;
  expected: number;
  /** The indices of the actual calls paired with an expected one (ascending). */
  matchedActual: number[];
}

const equal = (a: unknown, b: unknown): boolean => {
  if (Array.isArray(a) && Array.isArray(b)) return a.length === b.length && a.every((v, i) => equal(v, b[i]));
  if (isObject(a) && isObject(b)) {
    const ka = Object.keys(a).filter((k) => a[k] !== undefined);
    const kb = Object.keys(b).filter((k) => b[k] !== undefined);
    return ka.length === kb.length && ka.every((k) => equal(a[k], b[k]));
  }
  return a === b;
};

/** `expected` is contained in `actual`: every key of an expected object present with a contained value. */
const contains = (actual: unknown, expected: unknown): boolean => {
  if (isObject(expected))
    return isObject(actual) && Object.keys(expected).every((k) => contains(actual[k], expected[k]));
  return equal(actual, expected);
};

const parsed = (args: unknown): unknown => {
  if (typeof args !== 'string') return args ?? {};
  try {
    return JSON.parse(args);
  } catch {
    return args;
  }
};

/** Made on first use, not at start. */
let instance: Ajv | null = null;
const ajv = (): Ajv => (instance ??= new Ajv({ allErrors: false, strict: false }));

/** Whether an actual call satisfies an expected one (same tool; arguments by the spec's rule). */
export function callMatches(actual: ToolCallLike, expected: ToolCallLike, how: ArgumentMode): boolean {
  if (actual.name !== expected.name) return false;
  const a = parsed(actual.arguments);
  const e = parsed(expected.arguments);
  switch (how) {
    case 'ignore':
      return true;
    case 'exact':
      return equal(a, e);
    case 'subset':
      return contains(a, e);
    case 'schema':
      // The expected call's `arguments` is a JSON schema the actual arguments must satisfy.
      return isObject(e) ? ajv().validate(e, a) : false;
  }
}

/** Pairs expected calls with actual ones in order (a longest common subsequence under `callMatches`). */
function orderedMatches(actual: ToolCallLike[], expected: ToolCallLike[], how: ArgumentMode): number[] {
  const rows = actual.length + 1;
  const cols = expected.length + 1;
  const table = new Array<number>(rows * cols).fill(0);
  for (let i = 1; i < rows; i++) {
    for (let j = 1; j < cols; j++) {
      table[i * cols + j] = callMatches(actual[i - 1]!, expected[j - 1]!, how)
        ? table[(i - 1) * cols + j - 1]! + 1
        : Math.max(table[(i - 1) * cols + j]!, table[i * cols + j - 1]!);
    }
  }
  // Walk back through the table: the actual calls on one longest common subsequence.
  const paired: number[] = [];
  let i = rows - 1;
  let j = cols - 1;
  while (i > 0 && j > 0) {
    const here = table[i * cols + j]!;
    if (here === table[(i - 1) * cols + j]!) i--;
    else if (here === table[i * cols + j - 1]!) j--;
    else {
      paired.push(i - 1);
      i--;
      j--;
    }
  }
  return paired.reverse();
}

/** Pairs expected calls with actual ones in any order (a maximum bipartite matching). */
function unorderedMatches(actual: ToolCallLike[], expected: ToolCallLike[], how: ArgumentMode): number[] {
  const owner = new Array<number>(actual.length).fill(-1);
  const tryAssign = (e: number, seen: boolean[]): boolean => {
    for (let a = 0; a < actual.length; a++) {
      if (seen[a] || !callMatches(actual[a]!, expected[e]!, how)) continue;
      seen[a] = true;
      if (owner[a] === -1 || tryAssign(owner[a]!, seen)) {
        owner[a] = e;
        return true;
      }
    }
    return false;
  };
  for (let e = 0; e < expected.length; e++) tryAssign(e, new Array<boolean>(actual.length).fill(false));
  return owner.flatMap((e, a) => (e === -1 ? [] : [a]));
}

/**
 * Compares a trajectory's tool calls with the expected ones. `exact`: the same calls in the same order
 * and nothing else; `in_order`: every expected call, in order, others allowed between; `any_order`: the
 * same calls in any order, nothing else; `subset`: every actual call is an expected one (the agent did
 * nothing unexpected); `superset`: every expected call was made (in any order; more allowed).
 * Precision and recall count matched pairs (order-preserving for exact and in_order).
 */
export function matchToolCalls(
  actual: ToolCallLike[],
  expected: ToolCallLike[],
  spec: ToolCallMatchSpec,
): ToolCallMatch {
  const ordered = spec.mode === 'exact' || spec.mode === 'in_order';
  const matchedActual = ordered
    ? orderedMatches(actual, expected, spec.arguments)
    : unorderedMatches(actual, expected, spec.arguments);
  const matched = matchedActual.length;
  const allExpected = matched === expected.length;
  const allActual = matched === actual.length;
  const pass =
    spec.mode === 'exact' || spec.mode === 'any_order'
      ? allExpected && allActual
      : spec.mode === 'in_order' || spec.mode === 'superset'
        ? allExpected
        : allActual;
  return {
    precision: actual.length === 0 ? 1 : matched / actual.length,
    recall: expected.length === 0 ? 1 : matched / expected.length,
    pass,
    matched,
    actual: actual.length,
    expected: expected.length,
    matchedActual,
  };
}

/** What `trajectory_length` counts, and its bounds (inclusive; either may be left out). */
export interface LengthSpec {
  count: 'turns' | 'tool_calls';
  min?: number | undefined;
  max?: number | undefined;
}

/** Whether a trajectory's length is within bounds; the score is 1 within, else 0. */
export function checkLength(length: number, spec: LengthSpec): { pass: boolean; length: number } {
  const pass =
    (spec.min === undefined || length >= spec.min) && (spec.max === undefined || length <= spec.max);
  return { pass, length };
}

/** The tool calls of a value a dataset row or sample carries: an array of {name, arguments} (or OpenAI's shape). */
export function toolCallsOf(value: unknown): ToolCallLike[] | null {
  if (!Array.isArray(value)) return null;
  const out: ToolCallLike[] = [];
  for (const v of value) {
    if (!isObject(v)) return null;
    const fn = isObject(v.function) ? v.function : v;
    if (typeof fn.name !== 'string') return null;
    out.push({ name: fn.name, arguments: fn.arguments });
  }
  return out;
}
