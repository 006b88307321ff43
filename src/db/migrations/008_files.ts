import type { Kysely } from 'kysely';

/**
 * Files (`/v1/files`) are datasets uploaded as JSON lines with a purpose: the file's name, its size as
 * uploaded, and its purpose (`evals`). Datasets created otherwise keep these null.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema.alterTable('datasets').addColumn('purpose', 'text').execute();
  await db.schema.alterTable('datasets').addColumn('filename', 'text').execute();
  await db.schema.alterTable('datasets').addColumn('bytes', 'bigint').execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.alterTable('datasets').dropColumn('bytes').execute();
  await db.schema.alterTable('datasets').dropColumn('filename').execute();
  await db.schema.alterTable('datasets').dropColumn('purpose').execute();
}
