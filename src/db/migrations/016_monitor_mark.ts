import { type Kysely, sql } from 'kysely';

/**
 * A monitor's high-water mark: the last seq of its container's task logs that selection has considered.
 * Advanced in the same transaction as the selections it made, so a batch committed by the log writer
 * but never selected (its process died in between) is found after the mark and selected once.
 * Existing monitors start at their container's present end: what came before was selected already.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .alterTable('monitors')
    .addColumn('selected_through', 'bigint', (c) => c.notNull().defaultTo(0))
    .execute();
  await sql`update monitors set selected_through = coalesce((select c.last_seq from task_log_counters c
    where c.container_id = monitors.container_id), 0)`.execute(db);
}
