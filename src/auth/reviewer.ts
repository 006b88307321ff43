import type { Kysely } from 'kysely';
import type { Database } from '../db/schema.js';
import type { Principal } from './authenticator.js';

/**
 * Who is reviewing: the person behind the request. A key made on the dashboard records its user in
 * `created_by` and reviews as that user (`user:<id>`, the same person as on the Review page); any other
 * key is a reviewer of its own (`key:<id>`). A key made through the API records the key that made it
 * there, which is not a person: two annotators' keys made by one admin key are two reviewers.
 */
export async function reviewerOf(db: Kysely<Database>, principal: Principal): Promise<string> {
  // A member acting on the dashboard (no key) is that user already.
  if (principal.keyId.startsWith('user:')) return principal.keyId;
  const key = await db
    .selectFrom('api_keys')
    .innerJoin('users', 'users.id', 'api_keys.created_by')
    .select('users.id as user_id')
    .where('api_keys.id', '=', principal.keyId)
    .executeTakeFirst();
  return key ? `user:${key.user_id}` : `key:${principal.keyId}`;
}
