import { ngramCounts, overlap, totalOf } from './ngrams.js';

/**
 * Sentence GLEU (Wu et al. 2016) over 1–4-grams with one reference, as NLTK's `sentence_gleu`:
 * matched n-grams over the larger of the hypothesis' and the reference's n-gram totals.
 */
export function gleu(hypothesis: readonly string[], reference: readonly string[]): number {
  let matched = 0;
  let hypTotal = 0;
  let refTotal = 0;
  for (let n = 1; n <= 4; n++) {
    const hyp = ngramCounts(hypothesis, n);
    const ref = ngramCounts(reference, n);
    matched += overlap(hyp, ref);
    hypTotal += totalOf(hyp);
    refTotal += totalOf(ref);
  }
  const denominator = Math.max(hypTotal, refTotal);
  return denominator === 0 ? 0 : matched / denominator;
}
