import type { Kysely } from 'kysely';
import type { Database } from '../../db/schema.js';
import type { Usage } from '../types.js';

/** One cached answer: what the upstream answered, what it cost, and who served it. */
export interface CacheEntry {
  /** The answer as JSON text: a chat completion, a native Responses/Messages body, or embeddings. */
  bodyText: string;
  usage: Usage | null;
  /** USD the call cost when it was paid (what a hit saves). */
  cost: number;
  servedBy: string;
  upstreamModel: string;
  /** When the entry expires (epoch ms), as the store read it back; absent on what is written. */
  expiresAt?: number;
}

/**
 * Where entries live: a table of the database (embedded), or Redis (scale-out). Keys are the hashes of
 * `cacheKey`, which include the project; a store failure reads as a miss and never fails the call.
 */
export interface CacheStore {
  get(projectId: string, key: string): Promise<CacheEntry | null>;
  set(projectId: string, key: string, entry: CacheEntry, ttlSeconds: number): Promise<void>;
  close(): Promise<void>;
}

function parseEntry(text: string): CacheEntry | null {
  try {
    const entry = JSON.parse(text) as CacheEntry;
    return typeof entry.bodyText === 'string' ? entry : null;
  } catch {
    return null;
  }
}

/** Expired rows are deleted at most this often, by the process that writes an entry. */
const SWEEP_EVERY_MS = 60_000;

/** Entries in the `response_cache` table (SQLite or PostgreSQL), each with its expiry. */
export function createSqlCacheStore(db: Kysely<Database>, warn: (message: string) => void): CacheStore {
  let lastSweep = 0;
  return {
    async get(projectId, key) {
      try {
        const row = await db
          .selectFrom('response_cache')
          .select(['entry', 'expires_at'])
          .where('key', '=', key)
          .where('project_id', '=', projectId)
          .executeTakeFirst();
        const expiresAt = Number(row?.expires_at);
        if (!row || expiresAt <= Date.now()) return null;
        const entry = parseEntry(row.entry);
        return entry && { ...entry, expiresAt };
      } catch (err) {
        warn(`response cache read failed: ${(err as Error).message}`);
        return null;
      }
    },
    async set(projectId, key, entry, ttlSeconds) {
      const now = Date.now();
      const row = {
        key,
        project_id: projectId,
        entry: JSON.stringify(entry),
        expires_at: now + ttlSeconds * 1000,
        created_at: new Date(now).toISOString(),
      };
      try {
        await db
          .insertInto('response_cache')
          .values(row)
          .onConflict((oc) =>
            oc.column('key').doUpdateSet({
              entry: row.entry,
              expires_at: row.expires_at,
              created_at: row.created_at,
              project_id: row.project_id,
            }),
          )
          .execute();
        if (now - lastSweep > SWEEP_EVERY_MS) {
          lastSweep = now;
          await db.deleteFrom('response_cache').where('expires_at', '<=', now).execute();
        }
      } catch (err) {
        warn(`response cache write failed: ${(err as Error).message}`);
      }
    },
    async close() {},
  };
}

/** Entries in Redis under `<prefix>:cache:<key>`, expiring with their TTL. */
export async function createRedisCacheStore(
  url: string,
  prefix: string,
  warn: (message: string) => void,
): Promise<CacheStore> {
  const { openRedis } = await import('../../shared/redis.js');
  const redis = openRedis(url, 'command');
  try {
    await redis.connect();
  } catch {
    // ioredis keeps trying; until then every look-up is a miss.
  }
  const keyOf = (key: string) => `${prefix}:cache:${key}`;
  return {
    async get(_projectId, key) {
      try {
        const text = await redis.get(keyOf(key));
        return text === null ? null : parseEntry(text);
      } catch (err) {
        warn(`response cache read failed: ${(err as Error).message}`);
        return null;
      }
    },
    async set(_projectId, key, entry, ttlSeconds) {
      try {
        const ms = Math.max(1, Math.round(ttlSeconds * 1000));
        // The expiry travels in the entry, so that a reader knows it without a second command.
        await redis.set(keyOf(key), JSON.stringify({ ...entry, expiresAt: Date.now() + ms }), 'PX', ms);
      } catch (err) {
        warn(`response cache write failed: ${(err as Error).message}`);
      }
    },
    async close() {
      redis.disconnect();
    },
  };
}
