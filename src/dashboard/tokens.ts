import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';

/** A fresh secret for a cookie, a link or a CSRF header: 32 random bytes, URL-safe. */
export function randomToken(bytes = 32): string {
  return randomBytes(bytes).toString('base64url');
}

/** How secrets are stored: a database dump reveals no usable session, link or login state. */
export function sha256(text: string): string {
  return createHash('sha256').update(text).digest('hex');
}

/** Constant-time comparison of two strings (different lengths are simply unequal). */
export function sameSecret(a: string, b: string): boolean {
  const x = Buffer.from(a);
  const y = Buffer.from(b);
  return x.length === y.length && timingSafeEqual(x, y);
}

/** Ids of the dashboard's own rows (`usr_…`, `inv_…`): random, prefixed like every id of the service. */
export function dashboardId(prefix: 'usr' | 'inv' | 'invl'): string {
  return `${prefix}_${randomBytes(13).toString('hex')}`;
}
