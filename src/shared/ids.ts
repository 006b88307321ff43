import { randomBytes } from 'node:crypto';

const CROCKFORD = '0123456789abcdefghjkmnpqrstvwxyz';

export type IdPrefix =
  | 'org'
  | 'prj'
  | 'key'
  | 'ctr'
  | 'ds'
  | 'dsi'
  | 'mdl'
  | 'evl'
  | 'run'
  | 'log'
  | 'smp'
  | 'job'
  | 'mon'
  | 'eval'
  | 'sess'
  | 'aq'
  | 'aqi'
  | 'rev'
  | 'prm'
  | 'plm'
  | 'stl'
  | 'pgr'
  | 'grd'
  | 'gv';

// Random bytes are drawn in blocks: one call into the system's generator serves hundreds of ids.
const POOL_BYTES = 4096;
let pool = randomBytes(POOL_BYTES);
let poolAt = 0;

function randomFromPool(n: number): Buffer {
  if (poolAt + n > POOL_BYTES) {
    pool = randomBytes(POOL_BYTES);
    poolAt = 0;
  }
  poolAt += n;
  return Buffer.from(pool.subarray(poolAt - n, poolAt));
}

const random10 = (): Buffer => randomFromPool(10);

/** `bytes` random bytes as lowercase hex (W3C trace and span ids), from the same pool as ids. */
export function randomHex(bytes: number): string {
  return randomFromPool(bytes).toString('hex');
}

/**
 * A fresh W3C trace id that sorts by time: 48 bits of milliseconds, then 80 random bits (the random part
 * covers the right-most 7 bytes that Trace Context level 2 asks to be random). Traces a process starts
 * land at the end of the stores' indexes on trace ids rather than on a random page each.
 */
export function newTraceId(now = Date.now()): string {
  return now.toString(16).padStart(12, '0').slice(-12) + randomHex(10);
}

let lastMs = 0;
let lastRandom: Buffer = Buffer.alloc(10);
let lastTime = '';

function encode(bytes: Uint8Array, chars: number): string {
  let out = '';
  let bits = 0;
  let value = 0;
  for (const b of bytes) {
    value = (value << 8) | b;
    bits += 8;
    while (bits >= 5) {
      bits -= 5;
      out += CROCKFORD[(value >>> bits) & 31];
    }
  }
  return out.slice(0, chars);
}

function increment(buf: Buffer): Buffer {
  const next = Buffer.from(buf);
  for (let i = next.length - 1; i >= 0; i--) {
    const v = next[i]!;
    if (v < 255) {
      next[i] = v + 1;
      return next;
    }
    next[i] = 0;
  }
  return next;
}

/**
 * A prefixed, time-ordered id (ULID layout: 48-bit milliseconds, 80 random bits), monotonic within
 * the process, so that ordering by id is ordering by creation.
 */
export function newId(prefix: IdPrefix): string {
  const now = Date.now();
  if (now <= lastMs) {
    lastRandom = increment(lastRandom);
  } else {
    lastMs = now;
    lastRandom = random10();
    // The time part changes once per millisecond; ids made within it reuse it (gateway hot path).
    let time = '';
    for (let ms = lastMs, i = 0; i < 10; i++, ms = Math.floor(ms / 32)) time = CROCKFORD[ms % 32] + time;
    lastTime = time;
  }
  return `${prefix}_${lastTime}${encode(lastRandom, 16)}`;
}

export function nowIso(): string {
  return new Date().toISOString();
}
