// Database-independent: agreement statistics computed from in-memory inputs.
import { describe, expect, it } from 'vitest';
import { LruPromises } from '../../src/review/agreement/cache.js';
import { computeAgreement } from '../../src/review/agreement/compute.js';
import { byPromptHash, figuresOf } from '../../src/review/agreement/figures.js';
import { MAX_WORK, resamplesFor } from '../../src/review/agreement/inputs.js';
import type { Answer, Pair } from '../../src/review/agreement/pairs.js';
import {
  bootstrapInterval,
  categoriesOf,
  cohenKappa,
  confusionMatrix,
  meanAbsoluteError,
  pearson,
  percentAgreement,
  seededRandom,
  spearman,
} from '../../src/review/agreement/stats.js';
import { StatisticsThreads } from '../../src/review/agreement/threads.js';
import { ApiError } from '../../src/shared/errors.js';

// Agreement statistics without a server, against values worked out by hand (the working is in the
// comments) or printed in textbooks.

const score = (s: number): Answer => ({ score: s, passed: null, label: null });
const pass = (p: 0 | 1): Answer => ({ score: null, passed: p, label: null });
const label = (l: string): Answer => ({ score: null, passed: null, label: l });
const pairsOf = (judge: Answer[], human: Answer[], promptHash: string | null = 'h'): Pair[] =>
  judge.map((j, i) => ({ item: `i${i}`, promptHash, judge: j, human: human[i]! }));

/** Two raters' yes/no over 50 items: 20 yes/yes, 5 yes/no, 10 no/yes, 15 no/no (the usual textbook table). */
function textbookYesNo(): { a: string[]; b: string[] } {
  const cells: [string, string, number][] = [
    ['yes', 'yes', 20],
    ['yes', 'no', 5],
    ['no', 'yes', 10],
    ['no', 'no', 15],
  ];
  const a: string[] = [];
  const b: string[] = [];
  for (const [x, y, n] of cells) {
    for (let i = 0; i < n; i++) {
      a.push(x);
      b.push(y);
    }
  }
  return { a, b };
}

describe("Cohen's κ", () => {
  it('gives 0.4 on the textbook yes/no table (p_o = 0.7, p_e = 0.5)', () => {
    const { a, b } = textbookYesNo();
    expect(percentAgreement(a, b)).toBeCloseTo(0.7, 12);
    expect(cohenKappa(a, b)).toBeCloseTo(0.4, 12);
    // Rows are the first list, columns the second; labels sorted.
    expect(categoriesOf(a, b)).toEqual(['no', 'yes']);
    expect(confusionMatrix(a, b, ['no', 'yes'])).toEqual([
      [15, 10],
      [5, 20],
    ]);
  });

  it('weighs near misses: unweighted 3/11, linear 1/3, quadratic 3/7 on a worked example', () => {
    // judge [1,1,2,3], person [1,2,2,2]: confusion rows [1,1,0] [0,1,0] [0,1,0]; row sums [2,1,1],
    // column sums [1,3,0], n = 4. Observed weighted disagreement 2 (two misses by one grade) for every
    // weighting; expected Σ w(i,j)·r_i·c_j / n = 11/4 (0/1), 12/4 (|i−j|), 14/4 ((i−j)²).
    const judge = [1, 1, 2, 3];
    const human = [1, 2, 2, 2];
    expect(cohenKappa(judge, human, 'none')).toBeCloseTo(3 / 11, 12);
    expect(cohenKappa(judge, human, 'linear')).toBeCloseTo(1 / 3, 12);
    expect(cohenKappa(judge, human, 'quadratic')).toBeCloseTo(3 / 7, 12);
    expect(percentAgreement(judge, human)).toBe(0.5);
  });

  it('is 1 for perfect agreement, −1 for perfect disagreement on two balanced categories, null with one category', () => {
    expect(cohenKappa([1, 2, 3], [1, 2, 3])).toBe(1);
    expect(cohenKappa([0, 1, 0, 1], [1, 0, 1, 0])).toBe(-1);
    expect(cohenKappa([1, 1, 1], [1, 1, 1])).toBeNull();
    expect(cohenKappa([], [])).toBeNull();
    expect(percentAgreement([], [])).toBeNull();
  });

  it('sorts numeric categories by value (10 after 9), as scikit-learn does', () => {
    expect(categoriesOf([10, 9], [2])).toEqual([2, 9, 10]);
    expect(confusionMatrix([10, 9], [9, 9], [9, 10])).toEqual([
      [1, 0],
      [1, 0],
    ]);
  });
});

describe('correlations and error', () => {
  // x = 1..5, y = [2,4,5,4,5]: Σdxdy = 6, Σdx² = 10, Σdy² = 6, so r = 6/√60 = √0.6. Midranks of y:
  // [1, 2.5, 4.5, 2.5, 4.5], so ρ = 7/√90. |x − y| = 1,2,2,0,0, so MAE = 1.
  const x = [1, 2, 3, 4, 5];
  const y = [2, 4, 5, 4, 5];

  it("gives Pearson's r, Spearman's ρ on midranks and the MAE of a worked example", () => {
    expect(pearson(x, y)).toBeCloseTo(Math.sqrt(0.6), 12);
    expect(spearman(x, y)).toBeCloseTo(7 / Math.sqrt(90), 12);
    expect(meanAbsoluteError(x, y)).toBe(1);
  });

  it('is null where undefined: fewer than two pairs, a constant list, no pairs', () => {
    expect(pearson([1], [2])).toBeNull();
    expect(spearman([1], [2])).toBeNull();
    expect(pearson([1, 1, 1], [1, 2, 3])).toBeNull();
    expect(meanAbsoluteError([], [])).toBeNull();
  });
});

describe('bootstrap intervals', () => {
  it('draws the same resamples from the same seed, and others from another', () => {
    const a = seededRandom(7);
    const b = seededRandom(7);
    const c = seededRandom(8);
    const first = Array.from({ length: 5 }, () => a());
    expect(Array.from({ length: 5 }, () => b())).toEqual(first);
    expect(Array.from({ length: 5 }, () => c())).not.toEqual(first);
    for (const v of first) expect(v >= 0 && v < 1).toBe(true);
  });

  it('brackets the mean of a sample, seeded, and is null with fewer than two pairs or no resamples', () => {
    const values = Array.from({ length: 200 }, (_, i) => i % 10);
    const mean = (idx: Uint32Array) => idx.reduce((s, k) => s + values[k]!, 0) / idx.length;
    const opts = { seed: 3, resamples: 500 };
    const interval = bootstrapInterval(values.length, mean, opts);
    expect(interval).not.toBeNull();
    const [lo, hi] = interval!;
    // Mean 4.5, standard error √8.25/√200 ≈ 0.203: the 95 % interval is about ±0.4 around it.
    expect(lo).toBeLessThan(4.5);
    expect(hi).toBeGreaterThan(4.5);
    expect(hi - lo).toBeGreaterThan(0.6);
    expect(hi - lo).toBeLessThan(1.0);
    expect(bootstrapInterval(values.length, mean, opts)).toEqual(interval);
    expect(bootstrapInterval(1, mean, opts)).toBeNull();
    expect(bootstrapInterval(values.length, mean, { seed: 3, resamples: 0 })).toBeNull();
    // A statistic undefined on most resamples gives no interval.
    expect(bootstrapInterval(values.length, () => null, opts)).toBeNull();
  });
});

describe('figures of a group of pairs', () => {
  it('measures an ordinal scale on the grades: κ, weighted κ, correlations, MAE, confusion', () => {
    const f = figuresOf(
      { type: 'ordinal', min: 1, max: 3 },
      'h',
      pairsOf([1, 1, 2, 3].map(score), [1, 2, 2, 2].map(score)),
      { seed: 0, resamples: 200 },
    );
    expect(f.n).toBe(4);
    expect(f.kappa).toBeCloseTo(3 / 11, 12);
    expect(f.weighted_kappa).toBeCloseTo(3 / 7, 12);
    expect(f.mae).toBeCloseTo(0.5, 12);
    expect(f.confusion).toEqual({
      labels: [1, 2, 3],
      matrix: [
        [1, 1, 0],
        [0, 1, 0],
        [0, 1, 0],
      ],
    });
    expect(f.disagreements.map((d) => d.item_id)).toEqual(['i1', 'i3']);
    expect(f.intervals.kappa).not.toBeNull();
  });

  it('measures pass/fail on the verdict (a score at or above 0.5 passes), with no weighted κ or correlations', () => {
    const { a, b } = textbookYesNo();
    const judge = a.map((v, i) => (i % 2 === 0 ? pass(v === 'yes' ? 1 : 0) : score(v === 'yes' ? 0.9 : 0.1)));
    const human = b.map((v) => pass(v === 'yes' ? 1 : 0));
    const f = figuresOf({ type: 'pass_fail' }, null, pairsOf(judge, human), { seed: 0, resamples: 0 });
    expect(f.kappa).toBeCloseTo(0.4, 12);
    expect(f.percent_agreement).toBeCloseTo(0.7, 12);
    expect([f.weighted_kappa, f.pearson, f.spearman, f.mae]).toEqual([null, null, null, null]);
    expect(f.intervals.kappa).toBeNull();
    // 15 pairs disagree; at most 20 are listed.
    expect(f.disagreements).toHaveLength(15);
  });

  it('measures labels on the label, and lists at most 20 disagreements', () => {
    const { a, b } = textbookYesNo();
    const many = [...a, ...a].map(label);
    const f = figuresOf(
      { type: 'labels', labels: ['yes', 'no'] },
      'h',
      pairsOf(many, [...b, ...b].map(label)),
      { seed: 0, resamples: 0 },
    );
    expect(f.kappa).toBeCloseTo(0.4, 12);
    expect(f.disagreements).toHaveLength(20);
  });

  it('keeps each prompt hash apart, in the order first seen', () => {
    const pairs = [
      ...pairsOf([score(1)], [score(1)], 'b'),
      ...pairsOf([score(2)], [score(2)], null),
      ...pairsOf([score(3)], [score(3)], 'b'),
    ];
    const groups = byPromptHash(pairs);
    expect([...groups.keys()]).toEqual(['b', null]);
    expect(groups.get('b')!.map((p) => p.judge.score)).toEqual([1, 3]);
  });
});

describe('one computation (what a statistics thread runs)', () => {
  const scale = { type: 'ordinal', min: 1, max: 3 } as const;
  const judge = [1, 1, 2, 3].map(score);
  const human = [1, 2, 2, 2].map(score);

  it('gives each set its groups and its reviewers’ κ', () => {
    const [one, two] = computeAgreement({
      sets: [
        {
          scale,
          pairs: pairsOf(judge, human),
          people: {
            pairs: pairsOf(human, human, null),
            units: human.map((a, i) => ({ item: `i${i}`, answers: [a, a] })),
          },
        },
        { scale, pairs: [...pairsOf(judge, human, 'a'), ...pairsOf(human, human, 'b')], people: null },
      ],
      boot: { seed: 1, resamples: 100 },
    });
    expect(one!.groups.map((g) => g.kappa)).toEqual([cohenKappa([1, 1, 2, 3], [1, 2, 2, 2])]);
    // The reviewers all agree, on more than one grade.
    expect(one!.inter_annotator).toMatchObject({
      n: 4,
      percent_agreement: 1,
      kappa: 1,
      weighted_kappa: 1,
      reviewers: 2,
      fleiss_kappa: 1,
      krippendorff_alpha: 1,
    });
    expect(two!.groups.map((g) => g.prompt_hash)).toEqual(['a', 'b']);
    expect(two!.inter_annotator).toBeNull();
  });

  it('gives the same figures on a statistics thread as in this one, and recovers from a failing job', async () => {
    const threads = new StatisticsThreads({ threads: 1, maxWaiting: 4, idleMs: 1000 });
    try {
      const job = {
        sets: [{ scale, pairs: pairsOf(judge, human), people: null }],
        boot: { seed: 2, resamples: 300 },
      };
      expect(await threads.run(job)).toEqual(computeAgreement(job));
      // A job the thread cannot compute fails alone; the next one is answered.
      const broken = {
        sets: [{ scale, pairs: null, people: null }],
        boot: job.boot,
      } as unknown as typeof job;
      await expect(threads.run(broken)).rejects.toThrow(/agreement statistics failed/);
      expect(await threads.run(job)).toEqual(computeAgreement(job));
    } finally {
      await threads.close();
    }
  });

  it('refuses a job beyond the waiting bound with a 429', async () => {
    const threads = new StatisticsThreads({ threads: 1, maxWaiting: 1, idleMs: 1000 });
    try {
      const job = {
        sets: [{ scale, pairs: pairsOf(judge, human), people: null }],
        boot: { seed: 0, resamples: 100 },
      };
      const running = threads.run(job);
      const waiting = threads.run(job);
      const refused = await threads.run(job).catch((e: unknown) => e);
      expect(refused).toBeInstanceOf(ApiError);
      expect((refused as ApiError).status).toBe(429);
      await Promise.all([running, waiting]);
    } finally {
      await threads.close();
    }
  });
});

describe('bounds and the cache', () => {
  it('keeps the default and what was asked within the work bound, refuses more (422), lowers the default', () => {
    expect(resamplesFor(undefined, 1200)).toBe(1000);
    expect(resamplesFor(10_000, 2000)).toBe(10_000);
    expect(resamplesFor(undefined, 0)).toBe(1000);
    const err = (() => {
      try {
        resamplesFor(10_000, 2001);
      } catch (e) {
        return e;
      }
    })() as ApiError;
    expect(err).toBeInstanceOf(ApiError);
    expect([err.status, err.issues[0]!.loc]).toEqual([422, ['query', 'resamples']]);
    expect(err.message).toContain(`${Math.floor(MAX_WORK / 2001)}`);
    // Over 40,000 pairs the default gives way to what fits; over 200,000 there are no intervals at all.
    expect(resamplesFor(undefined, 40_000)).toBe(500);
    expect(resamplesFor(undefined, 300_000)).toBe(0);
  });

  it('shares one computation per key, keeps the most recent ones, forgets failures', async () => {
    const cache = new LruPromises<number>(2);
    let made = 0;
    const make = (v: number) => () => {
      made++;
      return Promise.resolve(v);
    };
    const [a, b] = await Promise.all([cache.get('a', make(1)), cache.get('a', make(2))]);
    expect([a, b, made]).toEqual([1, 1, 1]);
    await cache.get('b', make(3));
    await cache.get('a', make(9)); // 'a' used again: 'b' is now the least recent
    await cache.get('c', make(4));
    expect(cache.size).toBe(2);
    expect(await cache.get('a', make(9))).toBe(1);
    expect(await cache.get('b', make(5))).toBe(5);
    await expect(cache.get('x', () => Promise.reject(new Error('no')))).rejects.toThrow('no');
    expect(await cache.get('x', make(6))).toBe(6);
  });
});
