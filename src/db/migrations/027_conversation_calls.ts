import type { Kysely } from 'kysely';

/**
 * Simulated conversations: each model call of a conversation a run generates (the simulated user's and
 * the target's), recorded as it returns, so that a conversation redone after its worker died replays
 * the calls that were answered instead of paying for them again. Deleted with the run.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('run_conversation_calls')
    .addColumn('run_id', 'text', (c) => c.notNull().references('runs.id').onDelete('cascade'))
    .addColumn('launch_index', 'integer', (c) => c.notNull())
    .addColumn('position', 'integer', (c) => c.notNull())
    .addColumn('call_index', 'integer', (c) => c.notNull())
    .addColumn('role', 'text', (c) => c.notNull())
    .addColumn('model', 'text', (c) => c.notNull())
    .addColumn('result', 'text', (c) => c.notNull())
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addPrimaryKeyConstraint('run_conversation_calls_pk', [
      'run_id',
      'launch_index',
      'position',
      'call_index',
    ])
    .execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.dropTable('run_conversation_calls').execute();
}
