import type { Kysely } from 'kysely';

/** Which API a registered model's upstream speaks for generation: `chat` (completions) or `responses`. */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .alterTable('models')
    .addColumn('api', 'text', (c) => c.notNull().defaultTo('chat'))
    .execute();
}
