import type { Kysely } from 'kysely';
import type { Database } from '../db/schema.js';
import { ApiError } from '../shared/errors.js';
import { findActiveKeyByHash, touchKey } from './key-store.js';
import { hashKey, looksLikeKey } from './keys.js';

/** Who is calling: the key and the project every request acts inside. */
export interface Principal {
  keyId: string;
  projectId: string;
  permissions: readonly string[];
  /** The key's response-cache TTL (seconds): its gateway calls are cached; null or absent: not by default. */
  cacheTtlSeconds?: number | null;
}

export interface Authenticator {
  /** The principal of an `Authorization` header value; throws 401 `invalid_api_key`. */
  authenticate(header: string | undefined): Promise<Principal>;
  /** Drops a key from the cache at once (after revocation). */
  forget(keyId: string): void;
}

const TOUCH_EVERY_MS = 60_000;

/**
 * How long after its last verification a key is still trusted while the database cannot be asked: calls
 * of keys seen recently keep being served through an outage; a key not seen within this answers 503.
 */
export const KEY_OUTAGE_GRACE_MS = 3_600_000;

/** Keys remembered for the outage grace (the oldest forgotten past it). */
const MAX_REMEMBERED = 100_000;

function invalid(message: string): ApiError {
  return new ApiError('invalid_api_key', message);
}

/**
 * Verifies bearer keys against their stored HMAC. A verified key is trusted from memory for
 * `cacheMs`, so the hot path costs one map look-up; revocation through this process
 * takes effect at once, through another process within `cacheMs`.
 */
export function createAuthenticator(db: Kysely<Database>, pepper: string, cacheMs: number): Authenticator {
  // `until`: trusted without asking; `verified`: when the database last said yes (the outage grace).
  const cache = new Map<string, { principal: Principal; until: number; verified: number }>();
  const touched = new Map<string, number>();

  function touch(keyId: string, now: number): void {
    if ((touched.get(keyId) ?? 0) + TOUCH_EVERY_MS > now) return;
    touched.set(keyId, now);
    // Off the request path; a failed touch only loses a "last used" time.
    touchKey(db, keyId, new Date(now).toISOString()).catch(() => {});
  }

  return {
    async authenticate(header) {
      if (!header) throw invalid('Missing API key: send Authorization: Bearer <API_KEY>');
      const match = /^Bearer\s+(\S+)\s*$/i.exec(header);
      if (!match) throw invalid('Malformed Authorization header: expected Bearer <API_KEY>');
      const key = match[1]!;
      if (!looksLikeKey(key)) throw invalid('Invalid API key');
      const now = Date.now();
      // Keyed by the key itself, so a hit costs one map look-up and no HMAC: the key is in this
      // process's memory for the request anyway, and the cache keeps it for at most cacheMs.
      const hit = cache.get(key);
      if (hit && hit.until > now) {
        touch(hit.principal.keyId, now);
        return hit.principal;
      }
      const hash = hashKey(pepper, key);
      let record: Awaited<ReturnType<typeof findActiveKeyByHash>>;
      try {
        record = await findActiveKeyByHash(db, hash);
      } catch {
        // The database cannot be asked: a key verified recently is still trusted (revocations made
        // through this process have already dropped it), so calls go on being served.
        if (hit && hit.verified + KEY_OUTAGE_GRACE_MS > now) return hit.principal;
        throw new ApiError('upstream_unavailable', 'The database is unavailable; try again shortly');
      }
      if (!record) {
        cache.delete(key);
        throw invalid('Invalid or revoked API key');
      }
      const principal: Principal = {
        keyId: record.id,
        projectId: record.project_id,
        permissions: record.permissions,
        cacheTtlSeconds: record.cache_ttl_seconds ?? null,
      };
      if (cacheMs > 0) {
        if (cache.size >= MAX_REMEMBERED && !cache.has(key)) cache.delete(cache.keys().next().value!);
        cache.set(key, { principal, until: now + cacheMs, verified: now });
      }
      touch(record.id, now);
      return principal;
    },
    forget(keyId) {
      for (const [key, entry] of cache) if (entry.principal.keyId === keyId) cache.delete(key);
    },
  };
}
