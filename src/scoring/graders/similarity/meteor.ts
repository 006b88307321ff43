import { stemmer } from 'stemmer';

/** Synonyms of a word (WordNet's in NLTK); none by default, see docs/graders.md. */
export type SynonymSource = (word: string) => ReadonlySet<string>;

type Enum = [index: number, word: string];
type Match = [hypothesis: number, reference: number];

/**
 * Matches each hypothesis word, from the last, to the latest unused reference word of the same form
 * (NLTK's `_match_enums`); returns the matches and what is left unmatched on each side.
 */
function matchEnums(
  hyp: readonly Enum[],
  ref: readonly Enum[],
  candidates: (word: string) => Iterable<string> = (w) => [w],
): { matches: Match[]; hyp: Enum[]; ref: Enum[] } {
  const positions = new Map<string, number[]>();
  ref.forEach(([, word], j) => {
    const list = positions.get(word);
    if (list) list.push(j);
    else positions.set(word, [j]);
  });
  const matches: Match[] = [];
  const usedHyp = new Set<number>();
  const usedRef = new Set<number>();
  for (let i = hyp.length - 1; i >= 0; i--) {
    const [hypIndex, word] = hyp[i] as Enum;
    let best = -1;
    let bestWord: string | null = null;
    for (const candidate of candidates(word)) {
      const list = positions.get(candidate);
      const last = list?.[list.length - 1];
      if (last !== undefined && last > best) {
        best = last;
        bestWord = candidate;
      }
    }
    if (bestWord === null) continue;
    positions.get(bestWord)?.pop();
    usedHyp.add(i);
    usedRef.add(best);
    matches.push([hypIndex, (ref[best] as Enum)[0]]);
  }
  return {
    matches,
    hyp: hyp.filter((_, i) => !usedHyp.has(i)),
    ref: ref.filter((_, j) => !usedRef.has(j)),
  };
}

function countChunks(matches: readonly Match[]): number {
  let chunks = 1;
  for (let i = 0; i < matches.length - 1; i++) {
    const [h, r] = matches[i] as Match;
    const [nh, nr] = matches[i + 1] as Match;
    if (!(nh === h + 1 && nr === r + 1)) chunks += 1;
  }
  return chunks;
}

/**
 * METEOR as NLTK's `single_meteor_score` (α 0.9, β 3, γ 0.5): exact matches, then Porter stems, then
 * synonyms; F-mean weighted to recall, times one minus the fragmentation penalty.
 */
export function meteor(
  hypothesis: readonly string[],
  reference: readonly string[],
  synonyms: SynonymSource | null = null,
): number {
  const hyp0: Enum[] = hypothesis.map((w, i) => [i, w.toLowerCase()]);
  const ref0: Enum[] = reference.map((w, i) => [i, w.toLowerCase()]);
  const exact = matchEnums(hyp0, ref0);
  const stem = (list: Enum[]): Enum[] => list.map(([i, w]) => [i, stemmer(w)]);
  const stemmed = matchEnums(stem(exact.hyp), stem(exact.ref));
  // As in NLTK, synonyms are looked up on what the stem stage left: the stems.
  const synonymous = synonyms
    ? matchEnums(stemmed.hyp, stemmed.ref, (w) => new Set([...synonyms(w), w]))
    : { matches: [] };
  const matches = [...exact.matches, ...stemmed.matches, ...synonymous.matches].sort((a, b) => a[0] - b[0]);
  const count = matches.length;
  if (count === 0 || hyp0.length === 0 || ref0.length === 0) return 0;
  const precision = count / hyp0.length;
  const recall = count / ref0.length;
  const fmean = (precision * recall) / (0.9 * precision + 0.1 * recall);
  const penalty = 0.5 * (countChunks(matches) / count) ** 3;
  return (1 - penalty) * fmean;
}
