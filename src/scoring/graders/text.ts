import type { StringCheckGrader, TextSimilarityGrader, TextSimilarityMetric } from './schemas.js';
import { bleu } from './similarity/bleu.js';
import { fuzzyRatio } from './similarity/fuzzy.js';
import { gleu } from './similarity/gleu.js';
import { meteor } from './similarity/meteor.js';
import { whitespaceTokens } from './similarity/ngrams.js';
import { rougeL, rougeN, rougeTokens } from './similarity/rouge.js';
import { wordnetSynonyms } from './similarity/wordnet.js';

/** string_check: eq/ne exact, like a case-sensitive "contains", ilike the same ignoring case. */
export function stringCheck(
  operation: StringCheckGrader['operation'],
  input: string,
  reference: string,
): boolean {
  switch (operation) {
    case 'eq':
      return input === reference;
    case 'ne':
      return input !== reference;
    case 'like':
      return input.includes(reference);
    case 'ilike':
      return input.toLowerCase().includes(reference.toLowerCase());
  }
}

export const DEFAULT_EMBEDDING_MODEL = 'openai/text-embedding-3-small';

/** A text-similarity metric computed here (every one but `cosine`, which asks an embeddings model). */
export type LocalMetric = Exclude<TextSimilarityMetric, 'cosine'>;

/** The value of a local (not embedding) text-similarity metric, in [0, 1]. */
export function similarity(metric: LocalMetric, input: string, reference: string): number {
  switch (metric) {
    case 'fuzzy_match':
      return fuzzyRatio(input, reference);
    case 'bleu':
      return bleu(whitespaceTokens(input), whitespaceTokens(reference));
    case 'gleu':
      return gleu(whitespaceTokens(input), whitespaceTokens(reference));
    case 'meteor':
      return meteor(whitespaceTokens(input), whitespaceTokens(reference), wordnetSynonyms());
    case 'rouge_l':
      return rougeL(rougeTokens(input), rougeTokens(reference));
    default:
      return rougeN(rougeTokens(input), rougeTokens(reference), Number(metric.slice(6)));
  }
}

export function cosine(a: readonly number[], b: readonly number[]): number {
  let dot = 0;
  let na = 0;
  let nb = 0;
  const n = Math.min(a.length, b.length);
  for (let i = 0; i < n; i++) {
    const x = a[i] as number;
    const y = b[i] as number;
    dot += x * y;
    na += x * x;
    nb += y * y;
  }
  return na === 0 || nb === 0 ? 0 : dot / Math.sqrt(na * nb);
}

export function embeddingModelOf(grader: TextSimilarityGrader): string {
  return grader.embedding_model ?? DEFAULT_EMBEDDING_MODEL;
}
