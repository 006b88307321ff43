import type { Kysely } from 'kysely';

/**
 * Session monitors: a monitor scores either calls (`unit = 'call'`, as before) or whole sessions
 * (`unit = 'session'`), a session once it has been idle for `idle_seconds`. A session monitor's cursor is
 * `sessions_through`, the last seq of its container's task logs whose sessions it has noted; the sessions
 * noted and not yet idle wait in `monitor_pending_sessions` (only those its sampling chose). Both move in
 * one transaction, and an idle session leaves the pending table in the transaction that selects it (its
 * id in `monitor_selections.log_id`, unique per monitor), so a restart neither skips nor repeats one.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .alterTable('monitors')
    .addColumn('unit', 'text', (c) => c.notNull().defaultTo('call'))
    .execute();
  await db.schema.alterTable('monitors').addColumn('idle_seconds', 'integer').execute();
  await db.schema
    .alterTable('monitors')
    .addColumn('sessions_through', 'bigint', (c) => c.notNull().defaultTo(0))
    .execute();
  await db.schema
    .createTable('monitor_pending_sessions')
    .addColumn('monitor_id', 'text', (c) => c.notNull().references('monitors.id').onDelete('cascade'))
    .addColumn('session_id', 'text', (c) => c.notNull())
    .addColumn('noted_at', 'text', (c) => c.notNull())
    .addPrimaryKeyConstraint('monitor_pending_sessions_pk', ['monitor_id', 'session_id'])
    .execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.dropTable('monitor_pending_sessions').execute();
  await db.schema.alterTable('monitors').dropColumn('sessions_through').execute();
  await db.schema.alterTable('monitors').dropColumn('idle_seconds').execute();
  await db.schema.alterTable('monitors').dropColumn('unit').execute();
}
