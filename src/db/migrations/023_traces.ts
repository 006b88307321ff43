import type { Kysely } from 'kysely';

/**
 * The trace store: every span received over OTLP, keyed by (project, trace id, span id) so that an
 * exporter's retry stores nothing twice, and one summary row per trace (its time span, counts, tokens,
 * cost) so that the trace list reads one row per trace. Task logs gain the caller's span as their parent.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('spans')
    .addColumn('project_id', 'text', (c) => c.notNull())
    .addColumn('trace_id', 'text', (c) => c.notNull())
    .addColumn('span_id', 'text', (c) => c.notNull())
    .addColumn('parent_span_id', 'text')
    .addColumn('container_id', 'text')
    .addColumn('name', 'text', (c) => c.notNull())
    .addColumn('kind', 'text', (c) => c.notNull())
    .addColumn('operation', 'text')
    .addColumn('started_at', 'text', (c) => c.notNull())
    .addColumn('ended_at', 'text', (c) => c.notNull())
    .addColumn('duration_ms', 'double precision', (c) => c.notNull())
    .addColumn('status_code', 'text', (c) => c.notNull())
    .addColumn('status_message', 'text')
    .addColumn('attributes', 'text', (c) => c.notNull())
    .addColumn('events', 'text', (c) => c.notNull())
    .addColumn('resource', 'text', (c) => c.notNull())
    .addColumn('scope', 'text')
    .addColumn('session_id', 'text')
    .addColumn('model', 'text')
    .addColumn('model_call', 'text')
    .addColumn('task_log_id', 'text')
    .addColumn('received_at', 'text', (c) => c.notNull())
    .addPrimaryKeyConstraint('spans_pk', ['project_id', 'trace_id', 'span_id'])
    .execute();
  await db.schema
    .createIndex('spans_model')
    .on('spans')
    .columns(['project_id', 'model', 'trace_id'])
    .execute();
  await db.schema.createIndex('spans_received').on('spans').columns(['received_at']).execute();

  await db.schema
    .createTable('traces')
    .addColumn('project_id', 'text', (c) => c.notNull())
    .addColumn('trace_id', 'text', (c) => c.notNull())
    .addColumn('container_id', 'text')
    .addColumn('name', 'text')
    .addColumn('service_name', 'text')
    .addColumn('session_id', 'text')
    .addColumn('started_at', 'text', (c) => c.notNull())
    .addColumn('ended_at', 'text', (c) => c.notNull())
    .addColumn('span_count', 'integer', (c) => c.notNull())
    .addColumn('error_count', 'integer', (c) => c.notNull())
    .addColumn('model_call_count', 'integer', (c) => c.notNull())
    .addColumn('input_tokens', 'bigint', (c) => c.notNull())
    .addColumn('output_tokens', 'bigint', (c) => c.notNull())
    .addColumn('cost', 'double precision', (c) => c.notNull())
    .addColumn('updated_at', 'text', (c) => c.notNull())
    .addPrimaryKeyConstraint('traces_pk', ['project_id', 'trace_id'])
    .execute();
  await db.schema.createIndex('traces_started').on('traces').columns(['project_id', 'started_at']).execute();
  await db.schema
    .createIndex('traces_container')
    .on('traces')
    .columns(['project_id', 'container_id', 'started_at'])
    .execute();
  await db.schema
    .createIndex('traces_session')
    .on('traces')
    .columns(['project_id', 'session_id', 'started_at'])
    .execute();
  await db.schema.createIndex('traces_updated').on('traces').columns(['updated_at']).execute();

  await db.schema.alterTable('task_logs').addColumn('parent_span_id', 'text').execute();
}
