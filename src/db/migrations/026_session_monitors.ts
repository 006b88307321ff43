import type { Kysely } from 'kysely';

/**
 * Session monitors: a monitor scores either calls (`unit = 'call'`, as before) or whole sessions
 * (`unit = 'session'`), a session once it has been idle for `idle_seconds`. `sessions_through` is the
 * session monitor's durable cursor: every session of its container whose last activity is at or before
 * it has been considered (selected or sampled out), moved in the transaction that stores what was
 * selected. A session is selected at most once per monitor (`monitor_selections.log_id` holds its id,
 * unique per monitor). Sessions gain an index on their last activity, which the monitors' sweep reads.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .alterTable('monitors')
    .addColumn('unit', 'text', (c) => c.notNull().defaultTo('call'))
    .execute();
  await db.schema.alterTable('monitors').addColumn('idle_seconds', 'integer').execute();
  await db.schema.alterTable('monitors').addColumn('sessions_through', 'text').execute();
  await db.schema
    .createIndex('task_sessions_by_activity')
    .on('task_sessions')
    .columns(['container_id', 'last_activity_at'])
    .execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.dropIndex('task_sessions_by_activity').execute();
  await db.schema.alterTable('monitors').dropColumn('sessions_through').execute();
  await db.schema.alterTable('monitors').dropColumn('idle_seconds').execute();
  await db.schema.alterTable('monitors').dropColumn('unit').execute();
}
