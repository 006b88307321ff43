import { readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { computeAgreement } from '../../src/review/agreement/compute.js';
import { figuresOf } from '../../src/review/agreement/figures.js';
import type { Answer, Pair, Rated } from '../../src/review/agreement/pairs.js';
import { fleissKappa, krippendorffAlpha, type Unit } from '../../src/review/agreement/raters.js';
import {
  bootstrapInterval,
  categoriesOf,
  clusterBootstrapInterval,
  clustersOf,
  cohenKappa,
} from '../../src/review/agreement/stats.js';

// Agreement among many reviewers and the item bootstrap, without a server. The reference figures in
// raters-vectors.json were computed once by raters-reference.py (statsmodels' fleiss_kappa; Krippendorff's α
// by the coincidence-matrix method, which gives Krippendorff's own published 0.743 / 0.815 / 0.849).

interface Vector {
  name: string;
  units: number[][];
  alpha_nominal: number;
  alpha_ordinal: number;
  alpha_interval: number;
  fleiss_kappa?: number;
}

const vectors = JSON.parse(
  readFileSync(path.join(import.meta.dirname, 'raters-vectors.json'), 'utf8'),
) as Vector[];

describe("Fleiss' κ and Krippendorff's α against the reference figures", () => {
  for (const v of vectors) {
    it(`matches on ${v.name}`, () => {
      const labels = categoriesOf(v.units.flat(), []);
      expect(krippendorffAlpha(v.units, labels, 'nominal')).toBeCloseTo(v.alpha_nominal, 12);
      expect(krippendorffAlpha(v.units, labels, 'ordinal')).toBeCloseTo(v.alpha_ordinal, 12);
      expect(krippendorffAlpha(v.units, labels, 'interval')).toBeCloseTo(v.alpha_interval, 12);
      if (v.fleiss_kappa !== undefined) expect(fleissKappa(v.units, labels)).toBeCloseTo(v.fleiss_kappa, 12);
    });
  }

  it("gives Krippendorff's published figures on his own example (to his three decimals)", () => {
    const k = vectors.find((v) => v.name === 'krippendorff-2011')!;
    const labels = categoriesOf(k.units.flat(), []);
    expect(krippendorffAlpha(k.units, labels, 'nominal')!.toFixed(3)).toBe('0.743');
    expect(krippendorffAlpha(k.units, labels, 'ordinal')!.toFixed(3)).toBe('0.815');
    expect(krippendorffAlpha(k.units, labels, 'interval')!.toFixed(3)).toBe('0.849');
    // Fleiss (1971) as tabulated: κ = 0.210.
    const f = vectors.find((v) => v.name === 'fleiss-1971')!;
    expect(fleissKappa(f.units, categoriesOf(f.units.flat(), []))!.toFixed(3)).toBe('0.210');
  });

  it('gives the figures worked by hand on a small two-reviewer table', () => {
    // α = 1 − (n−1)·Σo·δ / Σn_c·n_k·δ, on a table small enough to work by hand:
    // units (a,a) (a,b) (b,b) (b,b): o_ab = o_ba = 1, o_aa = 2, o_bb = 4; n_a = 3, n_b = 5, n = 8;
    // α = 1 − 7·2 / (2·3·5) = 1 − 14/30 = 8/15.
    const units: Unit[] = [
      ['a', 'a'],
      ['a', 'b'],
      ['b', 'b'],
      ['b', 'b'],
    ];
    expect(krippendorffAlpha(units, ['a', 'b'], 'nominal')).toBeCloseTo(8 / 15, 12);
    // Fleiss: P̄ = (1 + 0 + 1 + 1)/4 = 0.75; p_a = 3/8, p_b = 5/8, Σp² = 34/64; κ = (0.75 − 34/64)/(30/64) = 7/15.
    expect(fleissKappa(units, ['a', 'b'])).toBeCloseTo(7 / 15, 12);
  });

  it('is null where undefined: one category, no item with two answers', () => {
    expect(fleissKappa([['a', 'a']], ['a'])).toBeNull();
    expect(krippendorffAlpha([['a', 'a']], ['a'], 'nominal')).toBeNull();
    expect(krippendorffAlpha([[1], [2]], [1, 2], 'interval')).toBeNull();
    expect(fleissKappa([['a']], ['a', 'b'])).toBeNull();
  });
});

describe('the bootstrap resamples items, not pairs', () => {
  const score = (s: number): Answer => ({ score: s, passed: null, label: null });
  const judge = [1, 1, 2, 3, 2, 3, 1, 2, 3, 3, 1, 2].map(score);
  const human = [1, 2, 2, 2, 3, 3, 1, 1, 3, 2, 1, 2].map(score);
  const once: Pair[] = judge.map((j, i) => ({ item: `i${i}`, promptHash: 'h', judge: j, human: human[i]! }));
  const scale = { type: 'ordinal', min: 1, max: 3 } as const;
  const boot = { seed: 5, resamples: 400 };

  it('groups entries by item in the order first seen', () => {
    expect(clustersOf(['a', 'b', 'a', 'c', 'b'])).toEqual([[0, 2], [1, 4], [3]]);
  });

  it('gives the same interval for items each reviewed twice alike as for the items once', () => {
    // Every item reviewed by two people who answer alike: twice the pairs, but no more information. An
    // item bootstrap draws the 12 items; a pair bootstrap would draw 24 "independent" pairs and narrow it.
    const twice = once.flatMap((p) => [p, { ...p }]);
    const single = figuresOf(scale, 'h', once, boot);
    const doubled = figuresOf(scale, 'h', twice, boot);
    expect(doubled.kappa).toBeCloseTo(single.kappa!, 12);
    expect(doubled.intervals.kappa).toEqual(single.intervals.kappa);
    expect(doubled.intervals.mae).toEqual(single.intervals.mae);
    const [lo, hi] = doubled.intervals.kappa as [number, number];
    // What a pair bootstrap gives on the doubled list: narrower.
    const cats = twice.map((p) => [p.judge.score!, p.human.score!] as const);
    const paired = bootstrapInterval(
      cats.length,
      (idx) =>
        cohenKappa(
          [...idx].map((k) => cats[k]![0]),
          [...idx].map((k) => cats[k]![1]),
        ),
      boot,
    )!;
    expect(paired[1] - paired[0]).toBeLessThan(hi - lo);
  });

  it('is the pair bootstrap when every item has one pair', () => {
    const mean = (idx: Uint32Array) => idx.reduce((s, k) => s + k, 0) / idx.length;
    expect(clusterBootstrapInterval(clustersOf(['a', 'b', 'c', 'd']), mean, boot)).toEqual(
      bootstrapInterval(4, mean, boot),
    );
  });
});

describe('reviewers among themselves', () => {
  const v = vectors.find((x) => x.name === 'three-or-four-reviewers')!;
  const units: Rated[] = v.units.map((u, i) => ({
    item: `i${i}`,
    answers: u.map((s) => ({ score: s, passed: null, label: null })),
  }));
  const pairs: Pair[] = units.map((u) => ({
    item: u.item,
    promptHash: null,
    judge: u.answers[0]!,
    human: u.answers[1]!,
  }));

  it("gives κ between the first two, Fleiss' κ and α over all, each with an interval", () => {
    const [one] = computeAgreement({
      sets: [{ scale: { type: 'ordinal', min: 1, max: 5 }, pairs: [], people: { pairs, units } }],
      boot: { seed: 0, resamples: 300 },
    });
    const ia = one!.inter_annotator!;
    expect(ia.n).toBe(units.length);
    expect(ia.reviewers).toBe(4);
    expect(ia.alpha_level).toBe('ordinal');
    expect(ia.krippendorff_alpha).toBeCloseTo(v.alpha_ordinal, 12);
    expect(ia.kappa).toBeCloseTo(
      cohenKappa(
        v.units.map((u) => u[0]!),
        v.units.map((u) => u[1]!),
      )!,
      12,
    );
    for (const k of ['kappa', 'weighted_kappa', 'fleiss_kappa', 'krippendorff_alpha'] as const) {
      const interval = ia.intervals[k];
      expect(interval, k).not.toBeNull();
      const value = ia[k]!;
      expect(interval![0]).toBeLessThanOrEqual(value);
      expect(interval![1]).toBeGreaterThanOrEqual(value);
    }
  });

  it('measures a continuous scale by α at the interval level (no Fleiss κ)', () => {
    const [one] = computeAgreement({
      sets: [{ scale: { type: 'continuous', min: 0, max: 10 }, pairs: [], people: { pairs, units } }],
      boot: { seed: 0, resamples: 200 },
    });
    const ia = one!.inter_annotator!;
    expect(ia.alpha_level).toBe('interval');
    expect(ia.krippendorff_alpha).toBeCloseTo(v.alpha_interval, 12);
    expect(ia.fleiss_kappa).toBeNull();
    expect(ia.intervals.krippendorff_alpha).not.toBeNull();
  });
});
