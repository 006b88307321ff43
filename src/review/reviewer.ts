import type { Kysely } from 'kysely';
import type { Principal } from '../auth/authenticator.js';
import type { Database } from '../db/schema.js';

/**
 * Who is reviewing: the person behind the request. A key made by a dashboard user reviews as that user
 * (`user:<id>`, the same person as on the Review page); a key made by the CLI, with no user, as itself.
 */
export async function reviewerOf(db: Kysely<Database>, principal: Principal): Promise<string> {
  const key = await db
    .selectFrom('api_keys')
    .select('created_by')
    .where('id', '=', principal.keyId)
    .executeTakeFirst();
  return key?.created_by ? `user:${key.created_by}` : `key:${principal.keyId}`;
}
