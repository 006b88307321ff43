import { type Static, Type } from 'typebox';

/**
 * What an evaluator's scores mean, and so what a person reviewing the same item may answer: pass or fail,
 * an integer grade between two bounds (ordinal: agreement weighs near misses), any number between two
 * bounds (continuous), or one of a set of labels.
 */
export const Scale = Type.Union(
  [
    Type.Object({ type: Type.Literal('pass_fail') }, { additionalProperties: false }),
    Type.Object(
      { type: Type.Literal('ordinal'), min: Type.Integer(), max: Type.Integer() },
      { additionalProperties: false },
    ),
    Type.Object(
      {
        type: Type.Literal('continuous'),
        min: Type.Union([Type.Number(), Type.Null()]),
        max: Type.Union([Type.Number(), Type.Null()]),
      },
      { additionalProperties: false },
    ),
    Type.Object(
      {
        type: Type.Literal('labels'),
        labels: Type.Array(Type.String({ minLength: 1, maxLength: 200 }), { minItems: 2, maxItems: 100 }),
      },
      { additionalProperties: false },
    ),
  ],
  { description: 'pass_fail, ordinal {min, max} (integers), continuous {min, max} or labels {labels}' },
);
export type Scale = Static<typeof Scale>;

/** What is wrong with a scale the schema accepts (bounds out of order, repeated labels), or null. */
export function scaleProblem(scale: Scale): string | null {
  if (scale.type === 'ordinal' || scale.type === 'continuous') {
    if (scale.min !== null && scale.max !== null && scale.min >= scale.max) {
      return `min (${scale.min}) must be below max (${scale.max})`;
    }
    if (scale.type === 'ordinal' && scale.max - scale.min > 100)
      return 'an ordinal scale has at most 101 grades';
  }
  if (scale.type === 'labels' && new Set(scale.labels).size !== scale.labels.length) {
    return 'labels must be distinct';
  }
  return null;
}

/** A scale as a person reads it: "pass/fail", "1..5", "one of a, b". */
export function describeScale(scale: Scale): string {
  switch (scale.type) {
    case 'pass_fail':
      return 'pass/fail';
    case 'ordinal':
      return `an integer ${scale.min}..${scale.max}`;
    case 'continuous':
      return `a number ${scale.min ?? '-∞'}..${scale.max ?? '∞'}`;
    case 'labels':
      return `one of ${scale.labels.join(', ')}`;
  }
}

/**
 * Whether a number is a value of the scale: 0 or 1 on pass/fail, an integer within the bounds on an
 * ordinal scale, a number within the (open-ended where null) bounds on a continuous one. A labels scale
 * holds no numbers.
 */
export function scoreOnScale(scale: Scale, score: number): boolean {
  switch (scale.type) {
    case 'pass_fail':
      return score === 0 || score === 1;
    case 'labels':
      return false;
    default:
      return (
        Number.isFinite(score) &&
        (scale.min === null || score >= scale.min) &&
        (scale.max === null || score <= scale.max) &&
        (scale.type !== 'ordinal' || Number.isInteger(score))
      );
  }
}
