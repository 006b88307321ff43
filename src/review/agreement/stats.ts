import { sampleCorrelation, sampleRankCorrelation } from 'simple-statistics';

/**
 * Agreement statistics over pairs of answers (a judge's and a person's, or two people's). Each follows the
 * reference implementation the tests compare with: scikit-learn's `cohen_kappa_score` and
 * `confusion_matrix`, SciPy's `pearsonr` and `spearmanr` (through simple-statistics).
 */

export type Category = string | number;

/** The categories of two answer lists, sorted as scikit-learn sorts labels (numbers by value). */
export function categoriesOf(a: readonly Category[], b: readonly Category[]): Category[] {
  const all = [...new Set([...a, ...b])];
  return all.sort((x, y) =>
    typeof x === 'number' && typeof y === 'number'
      ? x - y
      : String(x) < String(y)
        ? -1
        : String(x) > String(y)
          ? 1
          : 0,
  );
}

/** Rows are the first list's answers (the judge's), columns the second's (the person's). */
export function confusionMatrix(
  a: readonly Category[],
  b: readonly Category[],
  labels: readonly Category[],
): number[][] {
  const index = new Map(labels.map((l, i) => [l, i]));
  const m = labels.map(() => labels.map(() => 0));
  for (let k = 0; k < a.length; k++) {
    const i = index.get(a[k]!);
    const j = index.get(b[k]!);
    if (i !== undefined && j !== undefined) m[i]![j]! += 1;
  }
  return m;
}

export function percentAgreement(a: readonly Category[], b: readonly Category[]): number | null {
  if (a.length === 0) return null;
  let same = 0;
  for (let k = 0; k < a.length; k++) if (a[k] === b[k]) same += 1;
  return same / a.length;
}

/**
 * Cohen's κ, unweighted or weighted by the distance between category indices (linear or quadratic, as
 * scikit-learn does: the categories' order, not their values). Null when undefined (one category only).
 */
export function cohenKappa(
  a: readonly Category[],
  b: readonly Category[],
  weights: 'none' | 'linear' | 'quadratic' = 'none',
  labels: readonly Category[] = categoriesOf(a, b),
): number | null {
  const n = a.length;
  if (n === 0) return null;
  const k = labels.length;
  const c = confusionMatrix(a, b, labels);
  const rows = c.map((r) => r.reduce((s, v) => s + v, 0));
  const cols = labels.map((_, j) => c.reduce((s, r) => s + r[j]!, 0));
  let observed = 0;
  let expected = 0;
  for (let i = 0; i < k; i++) {
    for (let j = 0; j < k; j++) {
      const w =
        weights === 'none' ? (i === j ? 0 : 1) : weights === 'linear' ? Math.abs(i - j) : (i - j) ** 2;
      observed += w * c[i]![j]!;
      expected += (w * rows[i]! * cols[j]!) / n;
    }
  }
  if (expected === 0) return null;
  return 1 - observed / expected;
}

function finiteOrNull(x: number): number | null {
  return Number.isFinite(x) ? x : null;
}

/** Pearson's r; null with fewer than two pairs or a constant list. */
export function pearson(a: readonly number[], b: readonly number[]): number | null {
  if (a.length < 2) return null;
  return finiteOrNull(sampleCorrelation([...a], [...b]));
}

/** Spearman's ρ on midranks (ties share their average rank, as SciPy does). */
export function spearman(a: readonly number[], b: readonly number[]): number | null {
  if (a.length < 2) return null;
  return finiteOrNull(sampleRankCorrelation([...a], [...b]));
}

export function meanAbsoluteError(a: readonly number[], b: readonly number[]): number | null {
  if (a.length === 0) return null;
  let s = 0;
  for (let k = 0; k < a.length; k++) s += Math.abs(a[k]! - b[k]!);
  return s / a.length;
}

/** A small seeded generator (mulberry32): the same seed gives the same resamples on every machine. */
export function seededRandom(seed: number): () => number {
  let t = seed >>> 0;
  return () => {
    t = (t + 0x6d2b79f5) >>> 0;
    let r = Math.imul(t ^ (t >>> 15), 1 | t);
    r = (r + Math.imul(r ^ (r >>> 7), 61 | r)) ^ r;
    return ((r ^ (r >>> 14)) >>> 0) / 4294967296;
  };
}

/** The q-quantile of sorted values with linear interpolation (NumPy's default). */
function quantileSorted(sorted: readonly number[], q: number): number {
  const h = (sorted.length - 1) * q;
  const lo = Math.floor(h);
  const hi = Math.ceil(h);
  return sorted[lo]! + (h - lo) * (sorted[hi]! - sorted[lo]!);
}

/**
 * The indices of a list grouped by the item each entry belongs to, in the order items are first seen: the
 * clusters a bootstrap resamples (two reviewers of one item are two entries of one cluster).
 */
export function clustersOf(items: readonly string[]): number[][] {
  const byItem = new Map<string, number[]>();
  for (let k = 0; k < items.length; k++) {
    const c = byItem.get(items[k]!);
    if (c) c.push(k);
    else byItem.set(items[k]!, [k]);
  }
  return [...byItem.values()];
}

/**
 * The 95 % percentile bootstrap interval of a statistic over clustered entries: `resamples` draws of as
 * many clusters (items) as there are, with replacement (seeded), each drawn cluster bringing all its
 * entries; the statistic on each draw; the 2.5th and 97.5th percentiles. Resampling items rather than
 * entries keeps the two answers of one item together, so an item reviewed twice does not count as two
 * independent observations. Draws where the statistic is undefined are left out; null when too few remain.
 */
export function clusterBootstrapInterval(
  clusters: readonly (readonly number[])[],
  statistic: (indices: Uint32Array) => number | null,
  opts: { seed: number; resamples: number },
): [number, number] | null {
  const n = clusters.length;
  if (n < 2 || opts.resamples <= 0) return null;
  const next = seededRandom(opts.seed);
  const values: number[] = [];
  const widest = clusters.reduce((m, c) => Math.max(m, c.length), 0);
  const buffer = new Uint32Array(n * widest);
  for (let r = 0; r < opts.resamples; r++) {
    let len = 0;
    for (let k = 0; k < n; k++) {
      for (const i of clusters[Math.floor(next() * n)]!) buffer[len++] = i;
    }
    const v = statistic(buffer.subarray(0, len));
    if (v !== null && Number.isFinite(v)) values.push(v);
  }
  if (values.length < opts.resamples / 2) return null;
  values.sort((x, y) => x - y);
  return [quantileSorted(values, 0.025), quantileSorted(values, 0.975)];
}

/** The bootstrap interval over n independent entries (each its own cluster). */
export function bootstrapInterval(
  n: number,
  statistic: (indices: Uint32Array) => number | null,
  opts: { seed: number; resamples: number },
): [number, number] | null {
  return clusterBootstrapInterval(
    Array.from({ length: n }, (_, k) => [k]),
    statistic,
    opts,
  );
}

/** Picks `indices` out of a list (a bootstrap resample). */
export function pick<T>(list: readonly T[], indices: Uint32Array): T[] {
  const out: T[] = new Array(indices.length);
  for (let k = 0; k < indices.length; k++) out[k] = list[indices[k]!]!;
  return out;
}
