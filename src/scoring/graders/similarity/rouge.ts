import { ngramCounts, overlap, totalOf } from './ngrams.js';

/** Tokens as rouge-score's default tokenizer makes them: lower case, runs of [a-z0-9]. */
export function rougeTokens(text: string): string[] {
  return text.toLowerCase().match(/[a-z0-9]+/g) ?? [];
}

function fmeasure(precision: number, recall: number): number {
  return precision + recall > 0 ? (2 * precision * recall) / (precision + recall) : 0;
}

/** ROUGE-N F-measure (rouge-score's `rougeN`, no stemming). */
export function rougeN(prediction: readonly string[], target: readonly string[], n: number): number {
  const pred = ngramCounts(prediction, n);
  const targ = ngramCounts(target, n);
  const matched = overlap(targ, pred);
  return fmeasure(matched / Math.max(totalOf(pred), 1), matched / Math.max(totalOf(targ), 1));
}

/** Length of the longest common subsequence, in O(min) memory. */
export function lcsLength<T>(a: readonly T[], b: readonly T[]): number {
  if (a.length < b.length) return lcsLength(b, a);
  let previous = new Uint32Array(b.length + 1);
  let current = new Uint32Array(b.length + 1);
  for (let i = 1; i <= a.length; i++) {
    const x = a[i - 1];
    for (let j = 1; j <= b.length; j++) {
      current[j] =
        x === b[j - 1]
          ? (previous[j - 1] as number) + 1
          : Math.max(previous[j] as number, current[j - 1] as number);
    }
    [previous, current] = [current, previous];
  }
  return previous[b.length] as number;
}

/** ROUGE-L F-measure (rouge-score's `rougeL`: one LCS over the whole text). */
export function rougeL(prediction: readonly string[], target: readonly string[]): number {
  if (prediction.length === 0 || target.length === 0) return 0;
  const lcs = lcsLength(target, prediction);
  return fmeasure(lcs / prediction.length, lcs / target.length);
}
