import { type Static, Type } from 'typebox';
import { Nullable } from '../../http/schemas.js';
import type { Scale } from '../../shared/scale.js';
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

const Interval = Nullable(Type.Array(Type.Number(), { minItems: 2, maxItems: 2 }));

export const Figures = Type.Object({
  prompt_hash: Nullable(
    Type.String({ description: 'The judge prompt that scored these pairs (null: unknown)' }),
  ),
  n: Type.Integer({ minimum: 0, description: 'Pairs' }),
  percent_agreement: Nullable(Type.Number({ description: 'Share of pairs with the same answer' })),
  kappa: Nullable(
    Type.Number({ description: "Cohen's κ over pass/fail or labels (ordinal: over the grades)" }),
  ),
  weighted_kappa: Nullable(Type.Number({ description: 'Quadratically weighted κ (ordinal scales)' })),
  pearson: Nullable(Type.Number()),
  spearman: Nullable(Type.Number()),
  mae: Nullable(Type.Number({ description: 'Mean absolute error of the scores' })),
  confusion: Nullable(
    Type.Object({
      labels: Type.Array(Type.Union([Type.String(), Type.Number()])),
      matrix: Type.Array(Type.Array(Type.Integer()), { description: 'Rows: the judge; columns: the person' }),
    }),
  ),
  intervals: Type.Object(
    {
      percent_agreement: Interval,
      kappa: Interval,
      weighted_kappa: Interval,
      pearson: Interval,
      spearman: Interval,
      mae: Interval,
    },
    { description: '95 % percentile bootstrap intervals (seeded)' },
  ),
  disagreements: Type.Array(
    Type.Object({ item_id: Type.String(), judge: Type.Unknown(), human: Type.Unknown() }),
    { description: 'The first pairs that disagree (at most 20)' },
  ),
});
export type Figures = Static<typeof Figures>;

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
