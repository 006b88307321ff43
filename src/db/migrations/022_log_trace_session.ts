import type { Kysely } from 'kysely';

/**
 * A task log's place in a trace (the W3C trace and span ids its call carried, or that ingest gave it) and
 * in a session (a conversation or an agent's run). All nullable: logs recorded before carry none.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema.alterTable('task_logs').addColumn('trace_id', 'text').execute();
  await db.schema.alterTable('task_logs').addColumn('span_id', 'text').execute();
  await db.schema.alterTable('task_logs').addColumn('session_id', 'text').execute();
  await db.schema
    .createIndex('task_logs_trace')
    .on('task_logs')
    .columns(['project_id', 'trace_id'])
    .execute();
  await db.schema
    .createIndex('task_logs_session')
    .on('task_logs')
    .columns(['session_id', 'created_at'])
    .execute();
}
