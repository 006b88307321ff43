import type { TextSimilarityMetric } from './schemas.js';

/**
 * The sizes a text_similarity grader accepts, so that no text costs more than a bounded time (the
 * figures are in docs/graders.md). Lengths are JavaScript string lengths (UTF-16 code units: a
 * character outside the Basic Multilingual Plane counts twice), known without reading the text.
 */

/** Each of the two rendered texts (input, reference), every metric: 256 Ki characters. */
export const MAX_TEXT_CHARS = 262_144;

/**
 * fuzzy_match is an exact LCS over code points: |a|·⌈|b|/30⌉ word steps, and no exact algorithm is
 * much below quadratic. Two 200 KiB texts take 1.5–2.7 s of CPU (idle to loaded 2-core machine), too
 * close to the 2 s bound; the product of the two lengths is capped at 2^33 instead (about 0.5 s of
 * CPU: two texts of 92,681 characters, or a 200 KiB text with one of up to 41,943).
 */
export const MAX_FUZZY_PRODUCT = 2 ** 33;

export interface TextLimitProblem {
  /** The text at fault: the longer one when only their product is over. */
  field: 'input' | 'reference';
  message: string;
}

const count = (n: number) => n.toLocaleString('en-US');

/** Why these two texts are too long for `metric`, or null when they are within its limits. */
export function textLimitProblem(
  metric: TextSimilarityMetric,
  input: string,
  reference: string,
): TextLimitProblem | null {
  for (const [field, text] of [
    ['input', input],
    ['reference', reference],
  ] as const) {
    if (text.length > MAX_TEXT_CHARS) {
      return {
        field,
        message: `the rendered ${field} has ${count(text.length)} characters; ${metric} takes at most ${count(MAX_TEXT_CHARS)}`,
      };
    }
  }
  if (metric === 'fuzzy_match' && input.length * reference.length > MAX_FUZZY_PRODUCT) {
    return {
      field: input.length >= reference.length ? 'input' : 'reference',
      message:
        `the rendered input (${count(input.length)} characters) and reference (${count(reference.length)}) ` +
        `are too long together for fuzzy_match: the product of their lengths may be at most ` +
        `${count(MAX_FUZZY_PRODUCT)} (two texts of ${count(Math.floor(Math.sqrt(MAX_FUZZY_PRODUCT)))} characters)`,
    };
  }
  return null;
}
