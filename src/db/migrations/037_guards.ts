import type { Kysely } from 'kysely';

/**
 * Guards: a project's guard policies (ordered checks the gateway runs on a call's input, beside the
 * upstream call, or on its answer) and every verdict they gave, kept per task log as a score with the
 * guard's name.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('guard_policies')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('project_id', 'text', (c) => c.notNull().references('projects.id').onDelete('cascade'))
    .addColumn('name', 'text', (c) => c.notNull())
    .addColumn('description', 'text')
    .addColumn('enabled', 'integer', (c) => c.notNull().defaultTo(1))
    .addColumn('applies_to', 'text', (c) => c.notNull())
    .addColumn('checks', 'text', (c) => c.notNull())
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addColumn('updated_at', 'text', (c) => c.notNull())
    .addUniqueConstraint('guard_policies_name_unique', ['project_id', 'name'])
    .execute();

  await db.schema
    .createTable('guard_verdicts')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('project_id', 'text', (c) => c.notNull().references('projects.id').onDelete('cascade'))
    .addColumn('task_log_id', 'text')
    .addColumn('policy_id', 'text', (c) => c.notNull())
    .addColumn('guard', 'text', (c) => c.notNull())
    .addColumn('stage', 'text', (c) => c.notNull())
    .addColumn('action', 'text', (c) => c.notNull())
    .addColumn('verdict', 'text', (c) => c.notNull())
    .addColumn('score', 'real')
    .addColumn('passed', 'integer')
    .addColumn('reason', 'text')
    .addColumn('error', 'text')
    .addColumn('latency_ms', 'real', (c) => c.notNull())
    .addColumn('created_at', 'text', (c) => c.notNull())
    .execute();
  await db.schema
    .createIndex('guard_verdicts_by_log')
    .on('guard_verdicts')
    .columns(['project_id', 'task_log_id'])
    .execute();
  await db.schema
    .createIndex('guard_verdicts_by_guard')
    .on('guard_verdicts')
    .columns(['project_id', 'guard', 'created_at'])
    .execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.dropTable('guard_verdicts').execute();
  await db.schema.dropTable('guard_policies').execute();
}
