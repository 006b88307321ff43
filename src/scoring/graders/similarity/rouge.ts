import { lcsLength, symbolsOf } from './lcs.js';
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

/** ROUGE-L F-measure (rouge-score's `rougeL`: one LCS over the whole text). */
export function rougeL(prediction: readonly string[], target: readonly string[]): number {
  if (prediction.length === 0 || target.length === 0) return 0;
  const ids = new Map<string, number>();
  const lcs = lcsLength(symbolsOf(target, ids), symbolsOf(prediction, ids));
  return fmeasure(lcs / prediction.length, lcs / target.length);
}
