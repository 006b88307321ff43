import type { Kysely } from 'kysely';

/**
 * OpenAI-style evals (`/v1/evals`): an eval keeps its data source config and testing criteria; each of
 * its runs is an Evalgate run (`runs`), linked here with what the eval run was created with.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('evals')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('project_id', 'text', (c) => c.notNull().references('projects.id').onDelete('cascade'))
    .addColumn('name', 'text', (c) => c.notNull())
    .addColumn('metadata', 'text')
    .addColumn('data_source_config', 'text', (c) => c.notNull())
    .addColumn('testing_criteria', 'text', (c) => c.notNull())
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addColumn('updated_at', 'text', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('evals_by_project').on('evals').columns(['project_id', 'id']).execute();

  await db.schema
    .createTable('eval_runs')
    .addColumn('run_id', 'text', (c) => c.primaryKey())
    .addColumn('eval_id', 'text', (c) => c.notNull().references('evals.id').onDelete('cascade'))
    .addColumn('project_id', 'text', (c) => c.notNull())
    .addColumn('name', 'text', (c) => c.notNull())
    .addColumn('metadata', 'text')
    .addColumn('data_source', 'text', (c) => c.notNull())
    .addColumn('model', 'text', (c) => c.notNull())
    .addColumn('created_at', 'text', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('eval_runs_by_eval').on('eval_runs').columns(['eval_id', 'run_id']).execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.dropTable('eval_runs').execute();
  await db.schema.dropTable('evals').execute();
}
