import { codePoints, lcsLength } from './lcs.js';

/**
 * rapidfuzz's `fuzz.ratio` / 100: the normalized Indel similarity 1 − (insertions + deletions) /
 * (|a| + |b|), i.e. 2·LCS/(|a| + |b|) over code points. Two empty strings are identical (1).
 */
export function fuzzyRatio(a: string, b: string): number {
  const x = codePoints(a);
  const y = codePoints(b);
  const total = x.length + y.length;
  if (total === 0) return 1;
  return (2 * lcsLength(x, y)) / total;
}
