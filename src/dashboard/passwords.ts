import { randomBytes, type ScryptOptions, scrypt, timingSafeEqual } from 'node:crypto';
import { createMemoryLimiter } from '../ratelimit/memory.js';
import { ApiError } from '../shared/errors.js';

/**
 * The dashboard's own accounts: a name and a password, for a server without identity providers. Passwords
 * are hashed with scrypt (on libuv's thread pool, never on the event loop), the parameters kept with each
 * hash so that they can be raised later.
 */

/** The issuer of users made by an invitation link with a name and password (not the operator's `local`). */
export const PASSWORD_ISSUER = 'password';

export const PASSWORD_MIN = 12;
export const PASSWORD_MAX = 200;
/** Lower-case letters, digits, `.`, `_`, `-`; 3 to 40, starting with a letter or digit. */
export const USERNAME_PATTERN = '^[A-Za-z0-9][A-Za-z0-9._-]{2,39}$';

const PARAMS = { N: 2 ** 15, r: 8, p: 1 } as const;
const KEY_BYTES = 32;

function derive(
  password: string,
  salt: Buffer,
  params: { N: number; r: number; p: number },
): Promise<Buffer> {
  const options: ScryptOptions = { ...params, maxmem: 256 * params.N * params.r };
  return new Promise((resolve, reject) =>
    scrypt(password.normalize('NFC'), salt, KEY_BYTES, options, (err, key) =>
      err ? reject(err) : resolve(key),
    ),
  );
}

/** A new password's stored form: `scrypt$N$r$p$salt$hash`. */
export async function hashPassword(password: string): Promise<string> {
  const salt = randomBytes(16);
  const key = await derive(password, salt, PARAMS);
  return ['scrypt', PARAMS.N, PARAMS.r, PARAMS.p, salt.toString('base64url'), key.toString('base64url')].join(
    '$',
  );
}

/** A stored hash nobody's password matches: checked for unknown names, so that they take as long. */
let decoy: Promise<string> | null = null;

/** Whether `password` is the one of `stored`; null `stored` (no such account) is checked against a decoy. */
export async function verifyPassword(password: string, stored: string | null): Promise<boolean> {
  decoy ??= hashPassword(randomBytes(24).toString('base64url'));
  const [scheme, n, r, p, salt, hash] = (stored ?? (await decoy)).split('$');
  if (scheme !== 'scrypt' || !salt || !hash) return false;
  const expected = Buffer.from(hash, 'base64url');
  const key = await derive(password, Buffer.from(salt, 'base64url'), {
    N: Number(n),
    r: Number(r),
    p: Number(p),
  });
  return stored !== null && key.length === expected.length && timingSafeEqual(key, expected);
}

/** The password rules, checked where a password is chosen (422 on `loc`). */
export function checkPassword(password: string, username: string, loc: (string | number)[]): void {
  const length = [...password].length;
  if (length < PASSWORD_MIN || length > PASSWORD_MAX) {
    throw ApiError.invalid(loc, `A password has ${PASSWORD_MIN} to ${PASSWORD_MAX} characters`);
  }
  if (password.trim().toLowerCase() === username.toLowerCase()) {
    throw ApiError.invalid(loc, 'A password may not be the name it signs in with');
  }
}

/** How often a password may be tried per client address, and per name signed in with. */
export const ATTEMPTS_PER_CLIENT = { rate: 30, periodMs: 60_000, burst: 30 } as const;
export const ATTEMPTS_PER_NAME = { rate: 5, periodMs: 60_000, burst: 10 } as const;

/**
 * Attempts at a password (signing in, or choosing one with an invitation link), counted per key in
 * process memory (each process of a cluster counts its own): 429 with Retry-After past the limit.
 */
export function attemptLimiter(params: { rate: number; periodMs: number; burst: number }) {
  const limiter = createMemoryLimiter({ ...params });
  return {
    /** Throws 429 (with Retry-After) when `key` has been tried too often. */
    async take(key: string): Promise<void> {
      const decision = await limiter.take(key);
      if (decision.allowed) return;
      throw new ApiError(
        'rate_limit_exceeded',
        `Too many attempts; retry in ${decision.retryAfter} s`,
        { retry_after: decision.retryAfter },
        [],
        { 'retry-after': String(decision.retryAfter) },
      );
    },
    close: () => limiter.close(),
  };
}
