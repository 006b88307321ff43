import type { Kysely } from 'kysely';

/**
 * Sessions: a conversation or an agent's run, the calls of which task logs point at (`session_id`).
 * `task_sessions` holds each session's totals, kept by the log writer as it assigns calls;
 * `task_session_keys` is how later calls find a session by an exact key in their container (an
 * `X-Evalgate-Session` value, a Responses conversation id, a trace id, or the hash of a conversation
 * so far), so assignment is one index look-up per key, never a scan. Containers gain a switch for
 * conversation continuity (on by default).
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('task_sessions')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('project_id', 'text', (c) => c.notNull().references('projects.id').onDelete('cascade'))
    .addColumn('container_id', 'text', (c) => c.notNull().references('containers.id').onDelete('cascade'))
    .addColumn('assigned_by', 'text', (c) => c.notNull())
    .addColumn('external_key', 'text')
    .addColumn('started_at', 'text', (c) => c.notNull())
    .addColumn('last_activity_at', 'text', (c) => c.notNull())
    .addColumn('turn_count', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('error_count', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('prompt_tokens', 'bigint', (c) => c.notNull().defaultTo(0))
    .addColumn('completion_tokens', 'bigint', (c) => c.notNull().defaultTo(0))
    .addColumn('cost', 'double precision', (c) => c.notNull().defaultTo(0))
    .addColumn('latency_ms', 'double precision', (c) => c.notNull().defaultTo(0))
    .addColumn('models', 'text', (c) => c.notNull().defaultTo('[]'))
    .execute();
  await db.schema
    .createIndex('task_sessions_by_container')
    .on('task_sessions')
    .columns(['project_id', 'container_id', 'started_at', 'id'])
    .execute();
  await db.schema
    .createIndex('task_sessions_by_project')
    .on('task_sessions')
    .columns(['project_id', 'started_at', 'id'])
    .execute();
  await db.schema
    .createTable('task_session_keys')
    .addColumn('container_id', 'text', (c) => c.notNull().references('containers.id').onDelete('cascade'))
    .addColumn('key', 'text', (c) => c.notNull())
    .addColumn('session_id', 'text', (c) => c.notNull().references('task_sessions.id').onDelete('cascade'))
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addPrimaryKeyConstraint('task_session_keys_pk', ['container_id', 'key'])
    .execute();
  await db.schema
    .createIndex('task_session_keys_by_time')
    .on('task_session_keys')
    .columns(['created_at'])
    .execute();
  // A session's page shows the scores runs gave its calls (and it): samples found by item id.
  await db.schema.createIndex('run_samples_by_item').on('run_samples').columns(['item_id']).execute();
  await db.schema
    .alterTable('containers')
    .addColumn('session_continuity', 'integer', (c) => c.notNull().defaultTo(1))
    .execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.alterTable('containers').dropColumn('session_continuity').execute();
  await db.schema.dropIndex('run_samples_by_item').execute();
  await db.schema.dropTable('task_session_keys').execute();
  await db.schema.dropTable('task_sessions').execute();
}
