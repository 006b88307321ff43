import { ngramCounts, overlap, totalOf } from './ngrams.js';

/**
 * Sentence BLEU with one reference, uniform weights over 1–4-grams and no smoothing, as NLTK's
 * `sentence_bleu` computes it: zero when no unigram matches, a vanishing (not zero) value when a
 * higher order has no match, and the brevity penalty exp(1 − r/c) for a shorter hypothesis.
 */
export function bleu(hypothesis: readonly string[], reference: readonly string[]): number {
  const maxN = 4;
  let logSum = 0;
  for (let n = 1; n <= maxN; n++) {
    const hyp = ngramCounts(hypothesis, n);
    const matched = overlap(hyp, ngramCounts(reference, n));
    const total = Math.max(1, totalOf(hyp));
    if (n === 1 && matched === 0) return 0;
    // NLTK's default smoothing replaces a zero precision by the smallest positive double.
    const precision = matched === 0 ? Number.MIN_VALUE * 2 ** 52 : matched / total;
    logSum += Math.log(precision) / maxN;
  }
  const c = hypothesis.length;
  const r = reference.length;
  const brevity = c > r ? 1 : c === 0 ? 0 : Math.exp(1 - r / c);
  return brevity * Math.exp(logSum);
}
