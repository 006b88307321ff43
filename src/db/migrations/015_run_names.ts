import type { Kysely } from 'kysely';

/** Runs get an optional name (`nightly gpt-4o vs baseline`), listed and filtered by it. */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema.alterTable('runs').addColumn('name', 'text').execute();
  await db.schema.createIndex('runs_by_name').on('runs').columns(['project_id', 'name']).execute();
}
