import { type Expression, Parser } from 'expr-eval-fork';

/**
 * `calculate_output` of multi graders: arithmetic over the sub-graders' names, evaluated by
 * expr-eval (no JavaScript `eval`, no member access, no assignment or function definitions).
 * Functions: min, max, abs, floor, ceil, round, sqrt, exp, log, ln, log10, log2, sign, trunc.
 */
const parser = new Parser({
  allowMemberAccess: false,
  operators: {
    assignment: false,
    fndef: false,
    concatenate: false,
    in: false,
    random: false,
    factorial: false,
    length: false,
    comparison: true,
    logical: true,
    conditional: true,
  },
});

export class FormulaError extends Error {
  override name = 'FormulaError';
  constructor(
    readonly kind: 'parse' | 'variable' | 'value',
    message: string,
  ) {
    super(message);
  }
}

export interface Formula {
  variables: string[];
  evaluate(values: Readonly<Record<string, number>>): number;
}

/** Parses a formula and checks that it only names `known` variables. Throws FormulaError. */
export function parseFormula(text: string, known: readonly string[]): Formula {
  let expression: Expression;
  let variables: string[];
  try {
    expression = parser.parse(text);
    variables = expression.variables({ withMembers: true });
  } catch (err) {
    throw new FormulaError('parse', `calculate_output does not parse: ${(err as Error).message}`);
  }
  const unknown = variables.filter((v) => !known.includes(v));
  if (unknown.length) {
    throw new FormulaError(
      'variable',
      `calculate_output names ${unknown.map((v) => `'${v}'`).join(', ')}, not a sub-grader (known: ${known.join(', ')})`,
    );
  }
  return {
    variables,
    evaluate(values) {
      // A prototype-less copy: nothing but the sub-graders' own numbers is reachable.
      const scope: Record<string, number> = Object.create(null) as Record<string, number>;
      for (const v of variables) scope[v] = values[v] as number;
      let result: unknown;
      try {
        result = expression.evaluate(scope);
      } catch (err) {
        throw new FormulaError('value', `calculate_output failed: ${(err as Error).message}`);
      }
      if (typeof result === 'boolean') return result ? 1 : 0;
      if (typeof result !== 'number' || !Number.isFinite(result)) {
        throw new FormulaError('value', `calculate_output gave ${String(result)}, not a finite number`);
      }
      return result;
    },
  };
}
