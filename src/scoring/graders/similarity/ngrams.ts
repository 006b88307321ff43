/** n-gram counting shared by BLEU, GLEU and ROUGE. */

/** Counts of the n-grams of `tokens` (joined by U+0001, which no token contains after splitting). */
export function ngramCounts(tokens: readonly string[], n: number): Map<string, number> {
  const counts = new Map<string, number>();
  for (let i = 0; i + n <= tokens.length; i++) {
    const key = n === 1 ? (tokens[i] as string) : tokens.slice(i, i + n).join('\u0001');
    counts.set(key, (counts.get(key) ?? 0) + 1);
  }
  return counts;
}

/** Σ min(count in a, count in b): the clipped overlap of two n-gram multisets. */
export function overlap(a: ReadonlyMap<string, number>, b: ReadonlyMap<string, number>): number {
  let total = 0;
  for (const [key, count] of a) {
    const other = b.get(key);
    if (other !== undefined) total += Math.min(count, other);
  }
  return total;
}

export function totalOf(counts: ReadonlyMap<string, number>): number {
  let total = 0;
  for (const c of counts.values()) total += c;
  return total;
}

/** Whitespace tokens, as Python's `str.split()` gives them. */
export function whitespaceTokens(text: string): string[] {
  return text.split(/\s+/).filter((t) => t.length > 0);
}
