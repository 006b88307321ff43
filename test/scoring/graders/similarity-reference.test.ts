// Database-independent: text similarity is a pure function.
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { bleu } from '../../../src/scoring/graders/similarity/bleu.js';
import { fuzzyRatio } from '../../../src/scoring/graders/similarity/fuzzy.js';
import { gleu } from '../../../src/scoring/graders/similarity/gleu.js';
import { meteor } from '../../../src/scoring/graders/similarity/meteor.js';
import { whitespaceTokens } from '../../../src/scoring/graders/similarity/ngrams.js';
import { rougeL, rougeN, rougeTokens } from '../../../src/scoring/graders/similarity/rouge.js';
import { wordnetSynonyms } from '../../../src/scoring/graders/similarity/wordnet.js';

interface Pair {
  output: string;
  reference: string;
  fuzzy_match: number;
  bleu: number;
  gleu: number;
  meteor: number;
  meteor_no_synonyms: number;
  rouge_1: number;
  rouge_2: number;
  rouge_3: number;
  rouge_4: number;
  rouge_5: number;
  rouge_l: number;
}

// Computed by rapidfuzz, NLTK and rouge-score (scripts/graders/reference_metrics.py).
const { pairs } = JSON.parse(
  readFileSync(new URL('../../fixtures/text-similarity.json', import.meta.url), 'utf8'),
) as { pairs: Pair[] };

const synonyms = wordnetSynonyms();
type Metric = (p: Pair) => number;
const metrics: Record<string, [Metric, Metric]> = {
  fuzzy_match: [(p) => fuzzyRatio(p.output, p.reference), (p) => p.fuzzy_match],
  bleu: [(p) => bleu(whitespaceTokens(p.output), whitespaceTokens(p.reference)), (p) => p.bleu],
  gleu: [(p) => gleu(whitespaceTokens(p.output), whitespaceTokens(p.reference)), (p) => p.gleu],
  // NLTK's METEOR with WordNet 3.0 synonyms, and without a synonym stage (the fallback).
  meteor: [
    (p) => meteor(whitespaceTokens(p.output), whitespaceTokens(p.reference), synonyms),
    (p) => p.meteor,
  ],
  meteor_no_synonyms: [
    (p) => meteor(whitespaceTokens(p.output), whitespaceTokens(p.reference), null),
    (p) => p.meteor_no_synonyms,
  ],
  rouge_l: [(p) => rougeL(rougeTokens(p.output), rougeTokens(p.reference)), (p) => p.rouge_l],
};
for (const n of [1, 2, 3, 4, 5] as const) {
  metrics[`rouge_${n}`] = [
    (p) => rougeN(rougeTokens(p.output), rougeTokens(p.reference), n),
    (p) => p[`rouge_${n}`],
  ];
}

describe('text_similarity metrics agree with the reference libraries', () => {
  it('has at least 200 pairs', () => {
    expect(pairs.length).toBeGreaterThanOrEqual(200);
  });

  for (const [name, [ours, theirs]] of Object.entries(metrics)) {
    it(`${name} within 1e-6 on every pair`, () => {
      const off = pairs
        .map((p) => ({ output: p.output, reference: p.reference, ours: ours(p), theirs: theirs(p) }))
        .filter((r) => !(Math.abs(r.ours - r.theirs) <= 1e-6));
      expect(off).toEqual([]);
    });
  }

  it('has pairs where only a WordNet synonym matches, so the synonym stage is exercised', () => {
    expect(synonyms).not.toBeNull();
    const synonymPairs = pairs.filter((p) => Math.abs(p.meteor - p.meteor_no_synonyms) > 1e-9);
    expect(synonymPairs.length).toBeGreaterThan(0);
  });
});
