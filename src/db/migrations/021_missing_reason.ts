import type { Kysely } from 'kysely';

/** A missing sample says why it was not scored ("the sample has no output", "no baseline output", …). */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema.alterTable('run_samples').addColumn('missing_reason', 'text').execute();
}
