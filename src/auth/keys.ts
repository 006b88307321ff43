import { createHmac, randomBytes } from 'node:crypto';

const BASE62 = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';
export const KEY_PREFIX = 'eg_';
const KEY_PATTERN = /^eg_[0-9A-Za-z]{40,46}$/;

function base62(bytes: Buffer): string {
  let n = BigInt(`0x${bytes.toString('hex')}`);
  let out = '';
  while (n > 0n) {
    out = BASE62[Number(n % 62n)] + out;
    n /= 62n;
  }
  return out.padStart(43, '0');
}

/** A new secret key: `eg_` followed by 32 random bytes in base62. */
export function generateKey(): string {
  return KEY_PREFIX + base62(randomBytes(32));
}

export function looksLikeKey(candidate: string): boolean {
  return KEY_PATTERN.test(candidate);
}

/** Keys are stored only as this keyed hash; the pepper never leaves the server. */
export function hashKey(pepper: string, key: string): string {
  return createHmac('sha256', pepper).update(key).digest('hex');
}

/** What listings show of a key: enough to recognise it, never enough to use it. */
export function displayPrefix(key: string): string {
  return key.slice(0, 10);
}
