import { type Kysely, sql } from 'kysely';

/**
 * Reviewers are people or keys: `user:<user id>` for a key made on the dashboard (its `created_by` is
 * the user), `key:<key id>` for any other key. Before, a key made through the API reviewed as
 * `user:<id of the key that made it>`, one reviewer for every key one key made. Stored rows under such an
 * id move to `key:<id>` of the key that wrote them where that key is known (the one key made by that
 * key); where one key made several, which of them wrote a row cannot be told, and the row keeps its id
 * (still listed, under a reviewer of its own).
 */
const TABLES = ['annotation_reviews', 'annotation_assignments'] as const;

export async function up(db: Kysely<unknown>): Promise<void> {
  for (const table of TABLES) {
    const t = sql.table(table);
    // `substr(…, 1, 9) = 'user:key_'`: the old form, written the same on SQLite and PostgreSQL.
    await sql`update ${t} set reviewer = 'key:' || (
        select k.id from api_keys k where 'user:' || k.created_by = ${t}.reviewer)
      where substr(reviewer, 1, 9) = 'user:key_'
        and (select count(*) from api_keys k where 'user:' || k.created_by = ${t}.reviewer) = 1`.execute(db);
  }
}

export async function down(db: Kysely<unknown>): Promise<void> {
  for (const table of TABLES) {
    const t = sql.table(table);
    await sql`update ${t} set reviewer = 'user:' || (
        select k.created_by from api_keys k where 'key:' || k.id = ${t}.reviewer)
      where substr(reviewer, 1, 4) = 'key:'
        and exists (select 1 from api_keys k where 'key:' || k.id = ${t}.reviewer
          and substr(k.created_by, 1, 4) = 'key_')`.execute(db);
  }
}
