import type { Kysely } from 'kysely';

/**
 * GenAI events received as OTLP log records (`gen_ai.user.message`, `gen_ai.choice`, …), kept per span so
 * that a model call's messages join its task log whether they arrive before or after the span. Keyed by a
 * digest of the record, so an exporter's retry stores nothing twice.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('span_log_events')
    .addColumn('project_id', 'text', (c) => c.notNull())
    .addColumn('trace_id', 'text', (c) => c.notNull())
    .addColumn('span_id', 'text', (c) => c.notNull())
    .addColumn('event_key', 'text', (c) => c.notNull())
    .addColumn('name', 'text', (c) => c.notNull())
    .addColumn('time', 'text', (c) => c.notNull())
    .addColumn('ordinal', 'integer', (c) => c.notNull())
    .addColumn('attributes', 'text', (c) => c.notNull())
    .addColumn('received_at', 'text', (c) => c.notNull())
    .addPrimaryKeyConstraint('span_log_events_pk', ['project_id', 'trace_id', 'span_id', 'event_key'])
    .execute();
  await db.schema
    .createIndex('span_log_events_received')
    .on('span_log_events')
    .columns(['received_at'])
    .execute();
}
