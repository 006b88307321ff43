import type { Scale } from '../../shared/scale.js';
import type { Figures } from './figures-schema.js';
import type { Answer, Pair } from './pairs.js';
import {
  type Category,
  categoriesOf,
  clusterBootstrapInterval,
  clustersOf,
  cohenKappa,
  confusionMatrix,
  meanAbsoluteError,
  pearson,
  percentAgreement,
  pick,
  spearman,
} from './stats.js';

export interface BootstrapOptions {
  seed: number;
  resamples: number;
}

/** What κ compares on a scale: pass/fail, the label, or the grade; null where the scale has no categories. */
export function categoryOf(scale: Scale, a: Answer): Category | null {
  if (scale.type === 'pass_fail') return a.passed ?? (a.score === null ? null : a.score >= 0.5 ? 1 : 0);
  if (scale.type === 'labels') return a.label;
  if (scale.type === 'ordinal') return a.score;
  return a.passed;
}

type Stat = (idx: Uint32Array | null) => number | null;

/** The figures of one group of pairs (one prompt hash), with intervals. */
export function figuresOf(
  scale: Scale,
  promptHash: string | null,
  pairs: Pair[],
  boot: BootstrapOptions,
): Figures {
  const catPairs = pairs.filter(
    (p) => categoryOf(scale, p.judge) !== null && categoryOf(scale, p.human) !== null,
  );
  const judgeCats = catPairs.map((p) => categoryOf(scale, p.judge) as Category);
  const humanCats = catPairs.map((p) => categoryOf(scale, p.human) as Category);
  const numeric = scale.type === 'ordinal' || scale.type === 'continuous';
  const numPairs = numeric ? pairs.filter((p) => p.judge.score !== null && p.human.score !== null) : [];
  const js = numPairs.map((p) => p.judge.score as number);
  const hs = numPairs.map((p) => p.human.score as number);
  // The bootstrap draws items: an item's pairs (one per reviewer) are drawn together.
  const catClusters = clustersOf(catPairs.map((p) => p.item));
  const numClusters = clustersOf(numPairs.map((p) => p.item));
  const labels = categoriesOf(judgeCats, humanCats);
  const sel = <T>(list: T[], idx: Uint32Array | null) => (idx ? pick(list, idx) : list);
  const onCats = (f: Stat) => ({ clusters: catClusters, f });
  const onNums = (f: Stat) => (numeric ? { clusters: numClusters, f } : null);
  const stats: Record<keyof Figures['intervals'], { clusters: number[][]; f: Stat } | null> = {
    percent_agreement: onCats((i) => percentAgreement(sel(judgeCats, i), sel(humanCats, i))),
    kappa: onCats((i) => cohenKappa(sel(judgeCats, i), sel(humanCats, i), 'none')),
    weighted_kappa:
      scale.type === 'ordinal'
        ? onCats((i) => cohenKappa(sel(judgeCats, i), sel(humanCats, i), 'quadratic'))
        : null,
    pearson: onNums((i) => pearson(sel(js, i), sel(hs, i))),
    spearman: onNums((i) => spearman(sel(js, i), sel(hs, i))),
    mae: onNums((i) => meanAbsoluteError(sel(js, i), sel(hs, i))),
  };
  const value = (k: keyof typeof stats) => stats[k]?.f(null) ?? null;
  const interval = (k: keyof typeof stats) => {
    const s = stats[k];
    return s ? clusterBootstrapInterval(s.clusters, s.f, boot) : null;
  };
  const keys = Object.keys(stats) as (keyof typeof stats)[];
  const disagreements = pairs
    .filter((p) => {
      const a = categoryOf(scale, p.judge);
      return scale.type === 'continuous' ? p.judge.score !== p.human.score : a !== categoryOf(scale, p.human);
    })
    .slice(0, 20)
    .map((p) => ({ item_id: p.item, judge: p.judge, human: p.human }));
  return {
    prompt_hash: promptHash,
    n: pairs.length,
    percent_agreement: value('percent_agreement'),
    kappa: value('kappa'),
    weighted_kappa: value('weighted_kappa'),
    pearson: value('pearson'),
    spearman: value('spearman'),
    mae: value('mae'),
    confusion: catPairs.length ? { labels, matrix: confusionMatrix(judgeCats, humanCats, labels) } : null,
    intervals: Object.fromEntries(keys.map((k) => [k, interval(k)])) as Figures['intervals'],
    disagreements,
  };
}

/** Pairs grouped by the prompt that scored them, in the order each hash was first seen. */
export function byPromptHash(pairs: Pair[]): Map<string | null, Pair[]> {
  const groups = new Map<string | null, Pair[]>();
  for (const p of pairs) {
    const g = groups.get(p.promptHash);
    if (g) g.push(p);
    else groups.set(p.promptHash, [p]);
  }
  return groups;
}
