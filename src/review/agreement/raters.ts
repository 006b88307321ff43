import type { Category } from './stats.js';

/**
 * Agreement among any number of reviewers, each item rated by two or more of them: Fleiss' κ (as
 * statsmodels' `fleiss_kappa` computes it) and Krippendorff's α (as the `krippendorff` package computes
 * it, by its coincidence matrix). Pure functions: the statistics thread runs them with their bootstrap.
 */

/** One item's answers, one per reviewer (missing answers are simply absent). */
export type Unit = readonly Category[];

/** Units with at least two answers: the only ones that carry agreement. */
export function pairable(units: readonly Unit[]): Unit[] {
  return units.filter((u) => u.length >= 2);
}

/**
 * Fleiss' κ over items rated by two or more reviewers: P_i is the share of agreeing rater pairs on item i,
 * p_j the share of all answers in category j; κ = (P̄ − Σp_j²) / (1 − Σp_j²). With the same number of
 * reviewers on every item this is statsmodels' `fleiss_kappa(method='fleiss')`; with varying numbers each
 * item's P_i uses its own count. Null where undefined (no pairable item, or one category only).
 */
export function fleissKappa(units: readonly Unit[], labels: readonly Category[]): number | null {
  const rated = pairable(units);
  if (rated.length === 0) return null;
  const index = new Map(labels.map((l, i) => [l, i]));
  const totals = labels.map(() => 0);
  let answers = 0;
  let agreement = 0;
  for (const u of rated) {
    const counts = labels.map(() => 0);
    for (const v of u) {
      const j = index.get(v);
      if (j === undefined) continue;
      counts[j]! += 1;
    }
    const m = counts.reduce((s, c) => s + c, 0);
    if (m < 2) continue;
    let same = 0;
    for (let j = 0; j < counts.length; j++) {
      same += counts[j]! * (counts[j]! - 1);
      totals[j]! += counts[j]!;
    }
    agreement += same / (m * (m - 1));
    answers += m;
  }
  const items = rated.length;
  if (answers === 0) return null;
  const pBar = agreement / items;
  const pe = totals.reduce((s, t) => s + (t / answers) ** 2, 0);
  if (pe >= 1) return null;
  return (pBar - pe) / (1 - pe);
}

export type AlphaLevel = 'nominal' | 'ordinal' | 'interval';

/** The coincidence matrix of pairable units over `labels` (each unit's pairs weighted 1 / (m − 1)). */
function coincidences(units: readonly Unit[], labels: readonly Category[]): number[][] {
  const index = new Map(labels.map((l, i) => [l, i]));
  const o = labels.map(() => labels.map(() => 0));
  for (const u of units) {
    const idx = u.map((v) => index.get(v)).filter((i): i is number => i !== undefined);
    const m = idx.length;
    if (m < 2) continue;
    for (let a = 0; a < m; a++) {
      for (let b = 0; b < m; b++) if (a !== b) o[idx[a]!]![idx[b]!]! += 1 / (m - 1);
    }
  }
  return o;
}

/** Krippendorff's squared distance between categories c and k (labels in order for `ordinal`). */
function distance(
  level: AlphaLevel,
  labels: readonly Category[],
  marginals: readonly number[],
): (c: number, k: number) => number {
  if (level === 'nominal') return (c, k) => (c === k ? 0 : 1);
  if (level === 'interval') return (c, k) => (Number(labels[c]) - Number(labels[k])) ** 2;
  // Ordinal: the answers between the two categories, each end counted half.
  const cumulative = [0];
  for (const n of marginals) cumulative.push(cumulative[cumulative.length - 1]! + n);
  return (c, k) => {
    const lo = Math.min(c, k);
    const hi = Math.max(c, k);
    const between = cumulative[hi + 1]! - cumulative[lo]!;
    return (between - (marginals[c]! + marginals[k]!) / 2) ** 2;
  };
}

/**
 * Krippendorff's α = 1 − D_o / D_e over the units' pairable answers, at a level of measurement: nominal
 * (labels, pass/fail), ordinal (grades in `labels`' order) or interval (numbers). Null where undefined
 * (fewer than two pairable answers, or no expected disagreement).
 */
export function krippendorffAlpha(
  units: readonly Unit[],
  labels: readonly Category[],
  level: AlphaLevel,
): number | null {
  if (level === 'interval') return intervalAlpha(units.map((u) => u.map(Number)));
  const o = coincidences(pairable(units), labels);
  const marginals = o.map((row) => row.reduce((s, v) => s + v, 0));
  const n = marginals.reduce((s, v) => s + v, 0);
  if (n < 2) return null;
  const d = distance(level, labels, marginals);
  let observed = 0;
  let expected = 0;
  for (let c = 0; c < labels.length; c++) {
    for (let k = 0; k < labels.length; k++) {
      if (c === k) continue;
      const dist = d(c, k);
      observed += o[c]![k]! * dist;
      expected += marginals[c]! * marginals[k]! * dist;
    }
  }
  if (expected === 0) return null;
  return 1 - ((n - 1) * observed) / expected;
}

/**
 * α at the interval level straight from the values, in time linear in the answers (no matrix over the
 * distinct values): observed Σ_u Σ_{a≠b} (x_a − x_b)² / (m_u − 1), expected 2nΣx² − 2(Σx)² over all
 * pairable answers.
 */
function intervalAlpha(units: readonly (readonly number[])[]): number | null {
  let observed = 0;
  let n = 0;
  let sum = 0;
  let squares = 0;
  for (const u of units) {
    const m = u.length;
    if (m < 2) continue;
    let s = 0;
    let q = 0;
    for (const x of u) {
      s += x;
      q += x * x;
    }
    // Σ_{a≠b} (x_a − x_b)² = 2mΣx² − 2(Σx)².
    observed += (2 * m * q - 2 * s * s) / (m - 1);
    n += m;
    sum += s;
    squares += q;
  }
  if (n < 2) return null;
  const expected = 2 * n * squares - 2 * sum * sum;
  if (expected <= 0) return null;
  return 1 - ((n - 1) * observed) / expected;
}
