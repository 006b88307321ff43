import { lcsLength } from './rouge.js';

/**
 * rapidfuzz's `fuzz.ratio` / 100: the normalized Indel similarity 1 − (insertions + deletions) /
 * (|a| + |b|), i.e. 2·LCS/(|a| + |b|) over code points. Two empty strings are identical (1).
 */
export function fuzzyRatio(a: string, b: string): number {
  const x = Array.from(a);
  const y = Array.from(b);
  const total = x.length + y.length;
  if (total === 0) return 1;
  return (2 * lcsLength(x, y)) / total;
}
