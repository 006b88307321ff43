/**
 * The statistics of run comparisons: Student's t distribution (through the regularized incomplete beta
 * function) and the paired t-interval of a mean difference. Plain functions of numbers, no I/O.
 */

// Lanczos approximation (g = 7, 9 terms): |relative error| < 1e-15 for x > 0.
const LANCZOS_G = 7;
const LANCZOS = [
  0.9999999999998099, 676.5203681218851, -1259.1392167224028, 771.3234287776531, -176.6150291621406,
  12.507343278686905, -0.13857109526572012, 9.984369578019572e-6, 1.5056327351493116e-7,
];

/** ln Γ(x) for x > 0. */
function logGamma(x: number): number {
  if (x < 0.5) return Math.log(Math.PI / Math.sin(Math.PI * x)) - logGamma(1 - x);
  const z = x - 1;
  let a = LANCZOS[0]!;
  for (let i = 1; i < LANCZOS.length; i++) a += LANCZOS[i]! / (z + i);
  const t = z + LANCZOS_G + 0.5;
  return 0.5 * Math.log(2 * Math.PI) + (z + 0.5) * Math.log(t) - t + Math.log(a);
}

const TINY = 1e-300;
const EPSILON = 1e-15;

/** The continued fraction of I_x(a, b) (modified Lentz); converges fast for x < (a + 1) / (a + b + 2). */
function betaContinuedFraction(x: number, a: number, b: number): number {
  const qab = a + b;
  const qap = a + 1;
  const qam = a - 1;
  let c = 1;
  let d = 1 - (qab * x) / qap;
  if (Math.abs(d) < TINY) d = TINY;
  d = 1 / d;
  let h = d;
  // Needs O(√max(a, b)) terms; the cap only guards against a bug, not a real case.
  for (let m = 1; m <= 100_000; m++) {
    const m2 = 2 * m;
    let aa = (m * (b - m) * x) / ((qam + m2) * (a + m2));
    d = 1 + aa * d;
    if (Math.abs(d) < TINY) d = TINY;
    c = 1 + aa / c;
    if (Math.abs(c) < TINY) c = TINY;
    d = 1 / d;
    h *= d * c;
    aa = (-(a + m) * (qab + m) * x) / ((a + m2) * (qap + m2));
    d = 1 + aa * d;
    if (Math.abs(d) < TINY) d = TINY;
    c = 1 + aa / c;
    if (Math.abs(c) < TINY) c = TINY;
    d = 1 / d;
    const delta = d * c;
    h *= delta;
    if (Math.abs(delta - 1) < EPSILON) break;
  }
  return h;
}

/**
 * The regularized incomplete beta function I_x(a, b), a, b > 0, 0 ≤ x ≤ 1, given x and y = 1 − x
 * separately, so that an x close to 1 keeps the precision of y.
 */
function incompleteBeta(x: number, y: number, a: number, b: number): number {
  if (x <= 0) return 0;
  if (y <= 0) return 1;
  const logX = x > 0.5 ? Math.log1p(-y) : Math.log(x);
  const logY = y > 0.5 ? Math.log1p(-x) : Math.log(y);
  const front = Math.exp(logGamma(a + b) - logGamma(a) - logGamma(b) + a * logX + b * logY);
  if (x < (a + 1) / (a + b + 2)) return (front * betaContinuedFraction(x, a, b)) / a;
  return 1 - (front * betaContinuedFraction(y, b, a)) / b;
}

/** P(T > t) for t ≥ 0 under Student's t with `df` degrees of freedom: I_{df/(df+t²)}(df/2, 1/2) / 2. */
function upperTail(t: number, df: number): number {
  const t2 = t * t;
  return incompleteBeta(df / (df + t2), t2 / (df + t2), df / 2, 0.5) / 2;
}

function density(t: number, df: number): number {
  return Math.exp(
    logGamma((df + 1) / 2) -
      logGamma(df / 2) -
      0.5 * Math.log(df * Math.PI) -
      ((df + 1) / 2) * Math.log1p((t * t) / df),
  );
}

/** The cumulative distribution function of Student's t with `df` > 0 degrees of freedom. */
export function studentTCdf(t: number, df: number): number {
  const tail = upperTail(Math.abs(t), df);
  return t >= 0 ? 1 - tail : tail;
}

/**
 * The p-quantile of Student's t with `df` > 0 degrees of freedom (e.g. p = 0.975, df = 10 → 2.228).
 * Closed forms for df = 1 and 2; otherwise Newton's method on the upper tail, kept inside a bracket by
 * bisection, to a relative precision of about 1e-12.
 */
export function studentTQuantile(p: number, df: number): number {
  if (!(p > 0 && p < 1)) throw new RangeError(`p must lie in (0, 1), got ${p}`);
  if (!(df > 0)) throw new RangeError(`degrees of freedom must be positive, got ${df}`);
  if (p === 0.5) return 0;
  if (p < 0.5) return -studentTQuantile(1 - p, df);
  if (df === 1) return Math.tan(Math.PI * (p - 0.5));
  if (df === 2) return (2 * p - 1) / Math.sqrt(2 * p * (1 - p));
  // Solve upperTail(t) = q on the upper tail, where 1 - p keeps its precision.
  const q = 1 - p;
  let lo = 0;
  let hi = 1;
  while (upperTail(hi, df) > q) {
    lo = hi;
    hi *= 2;
  }
  let t = (lo + hi) / 2;
  for (let i = 0; i < 200; i++) {
    const excess = upperTail(t, df) - q;
    if (excess === 0) return t;
    // The tail falls as t grows: too much tail left means t is too small.
    if (excess > 0) lo = t;
    else hi = t;
    let next = t + excess / density(t, df);
    if (!(next > lo && next < hi)) next = (lo + hi) / 2;
    if (Math.abs(next - t) <= 1e-12 * Math.max(1, t)) return next;
    t = next;
  }
  return t;
}

export interface PairedInterval {
  /** Mean of the paired differences; null without pairs. */
  mean: number | null;
  /** Sample standard deviation of the differences; null with fewer than two pairs. */
  stdev: number | null;
  /** The t-interval around the mean at `level`; null with fewer than two pairs. */
  interval: { level: number; lower: number; upper: number } | null;
}

/**
 * The paired t-interval of a mean difference from the count, sum and sum of squares of the differences
 * d_i: mean = Σd / n, s² = (Σd² − n·mean²) / (n − 1), mean ± t(1 − (1 − level)/2, n − 1) · s / √n.
 */
export function pairedInterval(
  n: number,
  sum: number,
  sumSquares: number,
  allEqual = false,
  level = 0.95,
): PairedInterval {
  if (n < 1) return { mean: null, stdev: null, interval: null };
  const mean = sum / n;
  if (n < 2) return { mean, stdev: null, interval: null };
  // Identical differences have no spread at all: exactly 0, not the rounding left by Σd² − n·mean².
  const variance = allEqual ? 0 : Math.max(0, (sumSquares - n * mean * mean) / (n - 1));
  const stdev = Math.sqrt(variance);
  const half = studentTQuantile(1 - (1 - level) / 2, n - 1) * (stdev / Math.sqrt(n));
  return { mean, stdev, interval: { level, lower: mean - half, upper: mean + half } };
}
