import type { Kysely } from 'kysely';

/**
 * The response cache: entries of the embedded mode (scale-out keeps them in Redis), and the default TTL
 * of an API key and of a registered model (set: their calls are cached for that many seconds).
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('response_cache')
    .addColumn('key', 'text', (c) => c.primaryKey())
    .addColumn('project_id', 'text', (c) => c.notNull())
    .addColumn('entry', 'text', (c) => c.notNull())
    .addColumn('expires_at', 'bigint', (c) => c.notNull())
    .addColumn('created_at', 'text', (c) => c.notNull())
    .execute();
  await db.schema
    .createIndex('response_cache_by_expiry')
    .on('response_cache')
    .columns(['expires_at'])
    .execute();
  await db.schema.alterTable('api_keys').addColumn('cache_ttl_seconds', 'integer').execute();
  await db.schema.alterTable('models').addColumn('cache_ttl_seconds', 'integer').execute();
}
