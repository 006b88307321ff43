import type { Kysely } from 'kysely';

/**
 * Monitors: standing rules that score a sampled share of a container's task logs as they are recorded.
 * Each monitor owns one long-lived run (`runs.monitor_id`) whose chunks are the batches it selected;
 * `monitor_selections` gives every selected log a position in that run.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('monitors')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('project_id', 'text', (c) => c.notNull().references('projects.id').onDelete('cascade'))
    .addColumn('container_id', 'text', (c) => c.notNull().references('containers.id').onDelete('cascade'))
    .addColumn('name', 'text', (c) => c.notNull())
    .addColumn('run_id', 'text', (c) => c.notNull())
    .addColumn('evaluators', 'text', (c) => c.notNull())
    .addColumn('sampling_rate', 'double precision', (c) => c.notNull())
    .addColumn('filter', 'text', (c) => c.notNull())
    .addColumn('enabled', 'integer', (c) => c.notNull())
    .addColumn('environment', 'text', (c) => c.notNull())
    .addColumn('alert', 'text')
    .addColumn('alert_secret', 'text')
    .addColumn('alert_state', 'text')
    .addColumn('next_position', 'bigint', (c) => c.notNull().defaultTo(0))
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addColumn('updated_at', 'text', (c) => c.notNull())
    .addUniqueConstraint('monitors_name_unique', ['project_id', 'name'])
    .execute();
  await db.schema.createIndex('monitors_by_container').on('monitors').columns(['container_id']).execute();

  await db.schema
    .createTable('monitor_selections')
    .addColumn('monitor_id', 'text', (c) => c.notNull().references('monitors.id').onDelete('cascade'))
    .addColumn('position', 'integer', (c) => c.notNull())
    .addColumn('log_id', 'text', (c) => c.notNull())
    .addColumn('log_created_at', 'text', (c) => c.notNull())
    .addColumn('selected_at', 'text', (c) => c.notNull())
    .addPrimaryKeyConstraint('monitor_selections_pk', ['monitor_id', 'position'])
    .addUniqueConstraint('monitor_selections_log_unique', ['monitor_id', 'log_id'])
    .execute();

  // A monitor's run: never finalized while its monitor lives, and not listed among the evaluation runs.
  await db.schema.alterTable('runs').addColumn('monitor_id', 'text').execute();
}
