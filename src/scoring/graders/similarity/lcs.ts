/**
 * Length of the longest common subsequence of two symbol sequences, bit-parallel (Allison–Dix, in
 * Hyyrö's form, as rapidfuzz computes its Indel distance): the shorter sequence is a bit vector, and
 * each symbol of the longer one updates the whole vector with a few word operations, so the cost is
 * |longer| × ⌈|shorter| / 30⌉ word steps instead of |a| × |b| cells. A common prefix and suffix are
 * taken off first. No exact algorithm is much below quadratic in the worst case, which is why the
 * callers' texts are capped (text-limits.ts).
 */

/**
 * Bits per word. 30 rather than 32: a word plus its match bits plus a carry stays below 2^31, so every
 * step stays in small-integer arithmetic (V8 runs unsigned 32-bit values as doubles, about 2× slower).
 */
const W = 30;
const MASK = (1 << W) - 1;
/** Match vectors kept for the most frequent symbols: 4 Mi words (16 MiB) at most; the others are set per row. */
const DENSE_WORDS = 1 << 22;

/** Symbols of the shorter sequence, each with its positions; the most frequent ones with a full match vector. */
interface Alphabet {
  /** Symbol value → its index. */
  index: Map<number, number>;
  /** Match vectors of the first `dense` symbols (by index), `blocks` words each. */
  vectors: Int32Array;
  dense: number;
  /** Positions of each symbol of index ≥ `dense`. */
  positions: number[][];
}

function alphabetOf(b: Int32Array, blocks: number): Alphabet {
  const counts = new Map<number, number>();
  for (let j = 0; j < b.length; j++) {
    const s = b[j] as number;
    counts.set(s, (counts.get(s) ?? 0) + 1);
  }
  // Most frequent first: they get full vectors while the budget lasts; the rest are cheap to set per row.
  const symbols = [...counts.keys()].sort((x, y) => (counts.get(y) as number) - (counts.get(x) as number));
  const index = new Map<number, number>();
  for (const [i, s] of symbols.entries()) index.set(s, i);
  const dense = Math.min(symbols.length, Math.floor(DENSE_WORDS / Math.max(1, blocks)));
  const vectors = new Int32Array(dense * blocks);
  const positions: number[][] = symbols.map(() => []);
  for (let j = 0; j < b.length; j++) {
    const i = index.get(b[j] as number) as number;
    const block = (j / W) | 0;
    if (i < dense)
      vectors[i * blocks + block] = (vectors[i * blocks + block] as number) | (1 << (j - block * W));
    else (positions[i] as number[]).push(j);
  }
  return { index, vectors, dense, positions };
}

function setBits(vector: Int32Array, positions: readonly number[], on: boolean): void {
  for (const j of positions) {
    const block = (j / W) | 0;
    const bit = 1 << (j - block * W);
    vector[block] = on ? (vector[block] as number) | bit : (vector[block] as number) & ~bit;
  }
}

/** Zero bits among the first `m` of `state`: the LCS length. */
function zerosOf(state: Int32Array, m: number): number {
  let zeros = 0;
  for (let k = 0; k < state.length; k++) {
    const bits = Math.min(W, m - k * W);
    let v = ~(state[k] as number) & ((1 << bits) - 1);
    while (v !== 0) {
      v &= v - 1;
      zeros += 1;
    }
  }
  return zeros;
}

/** The LCS of a and of b, the shorter one (not empty): b is the bit vector, a's symbols the rows. */
function bitParallel(a: Int32Array, b: Int32Array): number {
  const m = b.length;
  const blocks = Math.ceil(m / W);
  const alphabet = alphabetOf(b, blocks);
  // Each row of the longer sequence: where its match vector is (a symbol absent from b changes nothing).
  const rows: number[] = [];
  for (let i = 0; i < a.length; i++) {
    const s = alphabet.index.get(a[i] as number);
    if (s !== undefined) rows.push(s);
  }
  const state = new Int32Array(blocks).fill(MASK);
  const scratch = [new Int32Array(blocks), new Int32Array(blocks)] as const;
  // A row's vector and offset: a full vector, or the scratch one with the symbol's bits set.
  const vectorOf = (s: number, slot: 0 | 1): [Int32Array, number] => {
    if (s < alphabet.dense) return [alphabet.vectors, s * blocks];
    setBits(scratch[slot], alphabet.positions[s] as number[], true);
    return [scratch[slot], 0];
  };
  const release = (s: number, slot: 0 | 1): void => {
    if (s >= alphabet.dense) setBits(scratch[slot], alphabet.positions[s] as number[], false);
  };
  let r = 0;
  // Two rows per pass: their carry chains are independent, which the processor overlaps (about 20 % faster).
  for (; r + 1 < rows.length; r += 2) {
    const s1 = rows[r] as number;
    const s2 = rows[r + 1] as number;
    const [v1, o1] = vectorOf(s1, 0);
    const [v2, o2] = vectorOf(s2, 1);
    let c1 = 0;
    let c2 = 0;
    for (let k = 0; k < blocks; k++) {
      const x = state[k] as number;
      const u = x & (v1[o1 + k] as number);
      const sum1 = x + u + c1;
      c1 = sum1 >>> W;
      const y = (sum1 | (x - u)) & MASK;
      const v = y & (v2[o2 + k] as number);
      const sum2 = y + v + c2;
      c2 = sum2 >>> W;
      state[k] = (sum2 | (y - v)) & MASK;
    }
    release(s1, 0);
    release(s2, 1);
  }
  if (r < rows.length) {
    const s1 = rows[r] as number;
    const [v1, o1] = vectorOf(s1, 0);
    let c1 = 0;
    for (let k = 0; k < blocks; k++) {
      const x = state[k] as number;
      const u = x & (v1[o1 + k] as number);
      const sum1 = x + u + c1;
      c1 = sum1 >>> W;
      state[k] = (sum1 | (x - u)) & MASK;
    }
  }
  return zerosOf(state, m);
}

/** LCS length of two sequences of non-negative integer symbols (code points, token ids). */
export function lcsLength(a: Int32Array, b: Int32Array): number {
  let start = 0;
  let endA = a.length;
  let endB = b.length;
  while (start < endA && start < endB && a[start] === b[start]) start += 1;
  while (endA > start && endB > start && a[endA - 1] === b[endB - 1]) {
    endA -= 1;
    endB -= 1;
  }
  const common = start + (a.length - endA);
  const x = a.subarray(start, endA);
  const y = b.subarray(start, endB);
  if (x.length === 0 || y.length === 0) return common;
  return common + (x.length >= y.length ? bitParallel(x, y) : bitParallel(y, x));
}

/** The code points of a string, as Python's `str` indexes them. */
export function codePoints(text: string): Int32Array {
  const out = new Int32Array(text.length);
  let n = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text.codePointAt(i) as number;
    out[n++] = c;
    if (c > 0xffff) i += 1;
  }
  return out.subarray(0, n);
}

/** Tokens as integer symbols, numbered by a map shared between the two sequences compared. */
export function symbolsOf(tokens: readonly string[], ids: Map<string, number>): Int32Array {
  const out = new Int32Array(tokens.length);
  tokens.forEach((t, i) => {
    let id = ids.get(t);
    if (id === undefined) {
      id = ids.size;
      ids.set(t, id);
    }
    out[i] = id;
  });
  return out;
}
