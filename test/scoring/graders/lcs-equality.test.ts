// Database-independent: text similarity is a pure function.
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { fuzzyRatio } from '../../../src/scoring/graders/similarity/fuzzy.js';
import { rougeL, rougeTokens } from '../../../src/scoring/graders/similarity/rouge.js';
import { seeded } from '../../helpers/random.js';

/** The quadratic implementations the bit-parallel LCS replaced, kept here as the oracle. */
function oldLcs<T>(a: readonly T[], b: readonly T[]): number {
  if (a.length < b.length) return oldLcs(b, a);
  let previous = new Uint32Array(b.length + 1);
  let current = new Uint32Array(b.length + 1);
  for (let i = 1; i <= a.length; i++) {
    const x = a[i - 1];
    for (let j = 1; j <= b.length; j++) {
      current[j] =
        x === b[j - 1]
          ? (previous[j - 1] as number) + 1
          : Math.max(previous[j] as number, current[j - 1] as number);
    }
    [previous, current] = [current, previous];
  }
  return previous[b.length] as number;
}

function oldFuzzy(a: string, b: string): number {
  const x = Array.from(a);
  const y = Array.from(b);
  const total = x.length + y.length;
  return total === 0 ? 1 : (2 * oldLcs(x, y)) / total;
}

function oldRougeL(prediction: readonly string[], target: readonly string[]): number {
  if (prediction.length === 0 || target.length === 0) return 0;
  const lcs = oldLcs(target, prediction);
  const p = lcs / prediction.length;
  const r = lcs / target.length;
  return p + r > 0 ? (2 * p * r) / (p + r) : 0;
}

const fixture = JSON.parse(
  readFileSync(new URL('../../fixtures/text-similarity.json', import.meta.url), 'utf8'),
) as { pairs: { output: string; reference: string }[] };

/** Strings over a small alphabet (many matches), astral characters included, around word boundaries. */
function randomText(next: () => number, length: number, alphabet: readonly string[]): string {
  let out = '';
  for (let i = 0; i < length; i++) out += alphabet[Math.floor(next() * alphabet.length)];
  return out;
}

const ALPHABETS: readonly (readonly string[])[] = [
  ['a', 'b'],
  ['a', 'b', 'c', ' '],
  ['x', 'y', 'é', '😀', '𝔸', ' '],
  'the quick brown fox jumps over lazy dog'.split(''),
  Array.from({ length: 300 }, (_, i) => String.fromCodePoint(0x4e00 + i)),
];

function pairs(seed: number, count: number): [string, string][] {
  const next = seeded(seed).random;
  const out: [string, string][] = [];
  for (let i = 0; i < count; i++) {
    const alphabet = ALPHABETS[i % ALPHABETS.length] as readonly string[];
    // Lengths across the word boundaries of the bit vector (29–31, 59–61, ...) and up to a few words.
    const n = Math.floor(next() * 200);
    const m = i % 7 === 0 ? n : Math.floor(next() * 200);
    const a = randomText(next, n, alphabet);
    // Some pairs share a prefix and a suffix, which the new code takes off first.
    const b =
      i % 3 === 0
        ? a.slice(0, n >> 2) + randomText(next, m, alphabet) + a.slice(n - (n >> 2))
        : randomText(next, m, alphabet);
    out.push([a, b]);
  }
  return out;
}

describe('the bit-parallel LCS scores as the quadratic one did', () => {
  const cases: [string, string][] = [
    ['', ''],
    ['', 'abc'],
    ['abc', ''],
    ['abc', 'abc'],
    ['kitten', 'sitting'],
    ['a'.repeat(31), 'a'.repeat(29)],
    ['ab'.repeat(40), 'ba'.repeat(40)],
    ['😀a😀', 'a😀a'],
    ...fixture.pairs.map((p): [string, string] => [p.output, p.reference]),
    ...pairs(7, 1500),
  ];

  it('fuzzy_match: the same value on every pair, both ways round', () => {
    const off = cases.flatMap(([a, b]) =>
      [
        [a, b],
        [b, a],
      ].filter(([x, y]) => fuzzyRatio(x as string, y as string) !== oldFuzzy(x as string, y as string)),
    );
    expect(off).toEqual([]);
  });

  it('rouge_l: the same value on every pair', () => {
    const words = pairs(11, 600).map(([a, b]): [string, string] => [
      a.replace(/(.)/g, '$1 '),
      b.replace(/(..)/g, '$1 '),
    ]);
    const off = [...cases, ...words].filter(([a, b]) => {
      const x = rougeTokens(a);
      const y = rougeTokens(b);
      return rougeL(x, y) !== oldRougeL(x, y);
    });
    expect(off).toEqual([]);
  });

  it('keeps full match vectors for only as many symbols as its budget holds, and still agrees', () => {
    // 13,000 distinct symbols × 434 words each is past the 4 Mi-word budget: the rarest are set per row.
    const next = seeded(3).random;
    const a = Array.from({ length: 13_000 }, (_, i) => String.fromCodePoint(0x10000 + i)).join('');
    // b: the same symbols in another order, a few of them swapped for random ones.
    const b = Array.from({ length: 13_000 }, (_, i) =>
      String.fromCodePoint(0x10000 + (next() < 0.1 ? Math.floor(next() * 13_000) : (i * 7919) % 13_000)),
    ).join('');
    expect(fuzzyRatio(a, b)).toBe(oldFuzzy(a, b));
    expect(fuzzyRatio(b, a + b.slice(0, 500))).toBe(oldFuzzy(b, a + b.slice(0, 500)));
  });
});
