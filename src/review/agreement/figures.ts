import type { Scale } from '../../shared/scale.js';
import type { Figures } from './figures-schema.js';
import type { Answer, Pair } from './pairs.js';
import {
  bootstrapInterval,
  type Category,
  categoriesOf,
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
function categoryOf(scale: Scale, a: Answer): Category | null {
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
  const cat = pairs
    .map((p) => [categoryOf(scale, p.judge), categoryOf(scale, p.human)] as const)
    .filter((c): c is readonly [Category, Category] => c[0] !== null && c[1] !== null);
  const judgeCats = cat.map((c) => c[0]);
  const humanCats = cat.map((c) => c[1]);
  const numeric = scale.type === 'ordinal' || scale.type === 'continuous';
  const nums = numeric
    ? pairs
        .filter((p) => p.judge.score !== null && p.human.score !== null)
        .map((p) => [p.judge.score as number, p.human.score as number] as const)
    : [];
  const js = nums.map((x) => x[0]);
  const hs = nums.map((x) => x[1]);
  const labels = categoriesOf(judgeCats, humanCats);
  const sel = <T>(list: T[], idx: Uint32Array | null) => (idx ? pick(list, idx) : list);
  const stats: Record<keyof Figures['intervals'], { n: number; f: Stat } | null> = {
    percent_agreement: { n: cat.length, f: (i) => percentAgreement(sel(judgeCats, i), sel(humanCats, i)) },
    kappa: { n: cat.length, f: (i) => cohenKappa(sel(judgeCats, i), sel(humanCats, i), 'none') },
    weighted_kappa:
      scale.type === 'ordinal'
        ? { n: cat.length, f: (i) => cohenKappa(sel(judgeCats, i), sel(humanCats, i), 'quadratic') }
        : null,
    pearson: numeric ? { n: js.length, f: (i) => pearson(sel(js, i), sel(hs, i)) } : null,
    spearman: numeric ? { n: js.length, f: (i) => spearman(sel(js, i), sel(hs, i)) } : null,
    mae: numeric ? { n: js.length, f: (i) => meanAbsoluteError(sel(js, i), sel(hs, i)) } : null,
  };
  const value = (k: keyof typeof stats) => stats[k]?.f(null) ?? null;
  const interval = (k: keyof typeof stats) => {
    const s = stats[k];
    return s ? bootstrapInterval(s.n, s.f, boot) : null;
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
    confusion: cat.length ? { labels, matrix: confusionMatrix(judgeCats, humanCats, labels) } : null,
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
