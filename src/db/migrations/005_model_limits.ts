import type { Kysely } from 'kysely';

/** Per-minute budgets of a registered model for the calls evaluation runs make; null means no limit. */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema.alterTable('models').addColumn('rpm_limit', 'integer').execute();
  await db.schema.alterTable('models').addColumn('tpm_limit', 'integer').execute();
}
