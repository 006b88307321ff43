import type { Kysely } from 'kysely';

export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('runs')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('project_id', 'text', (c) => c.notNull().references('projects.id'))
    .addColumn('container_id', 'text', (c) => c.notNull().references('containers.id'))
    .addColumn('status', 'text', (c) => c.notNull())
    .addColumn('environment', 'text', (c) => c.notNull())
    .addColumn('evaluators', 'text', (c) => c.notNull())
    .addColumn('dataset_ids', 'text', (c) => c.notNull())
    .addColumn('sample', 'text')
    .addColumn('ground_truth', 'text')
    .addColumn('baseline', 'text')
    .addColumn('config', 'text', (c) => c.notNull())
    .addColumn('metadata', 'text')
    .addColumn('plan', 'text', (c) => c.notNull())
    .addColumn('results', 'text')
    .addColumn('metrics', 'text')
    .addColumn('spend', 'double precision')
    .addColumn('error', 'text')
    .addColumn('process_id', 'text')
    .addColumn('idempotency_key', 'text')
    .addColumn('request_hash', 'text')
    .addColumn('cancel_requested', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addColumn('started_at', 'text')
    .addColumn('finished_at', 'text')
    .addColumn('error_at', 'text')
    .addColumn('updated_at', 'text', (c) => c.notNull())
    .addUniqueConstraint('runs_project_idempotency', ['project_id', 'idempotency_key'])
    .execute();
  await db.schema
    .createIndex('runs_project_created')
    .on('runs')
    .columns(['project_id', 'created_at', 'id'])
    .execute();
  await db.schema.createIndex('runs_status').on('runs').column('status').execute();
  await db.schema.createIndex('runs_container').on('runs').column('container_id').execute();

  // One row per (run, launch, evaluator, position): written once, so a resumed run never scores twice.
  await db.schema
    .createTable('run_samples')
    .addColumn('run_id', 'text', (c) => c.notNull().references('runs.id').onDelete('cascade'))
    .addColumn('launch_index', 'integer', (c) => c.notNull())
    .addColumn('evaluator_id', 'text', (c) => c.notNull())
    .addColumn('position', 'integer', (c) => c.notNull())
    .addColumn('item_id', 'text')
    .addColumn('status', 'text', (c) => c.notNull())
    .addColumn('score', 'double precision')
    .addColumn('passed', 'integer')
    .addColumn('reasoning', 'text')
    .addColumn('error', 'text')
    .addColumn('logs', 'text')
    .addColumn('input', 'text')
    .addColumn('output', 'text')
    .addColumn('expected', 'text')
    .addColumn('baseline', 'text')
    .addColumn('usage', 'text')
    .addColumn('cost', 'double precision', (c) => c.notNull().defaultTo(0))
    .addColumn('prompt_tokens', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('completion_tokens', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('calls', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('inconsistent', 'integer')
    .addColumn('latency_ms', 'double precision')
    .addColumn('extra', 'text')
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addPrimaryKeyConstraint('run_samples_pk', ['run_id', 'launch_index', 'evaluator_id', 'position'])
    .execute();
  // The samples listing reads positions in order across evaluators.
  await db.schema
    .createIndex('run_samples_by_position')
    .on('run_samples')
    .columns(['run_id', 'launch_index', 'position', 'evaluator_id'])
    .execute();

  // Generated completions of `generate` sides, once per (run, launch, side, position), reused by every evaluator.
  await db.schema
    .createTable('run_generations')
    .addColumn('run_id', 'text', (c) => c.notNull().references('runs.id').onDelete('cascade'))
    .addColumn('launch_index', 'integer', (c) => c.notNull())
    .addColumn('side', 'text', (c) => c.notNull())
    .addColumn('position', 'integer', (c) => c.notNull())
    .addColumn('model', 'text', (c) => c.notNull())
    .addColumn('output', 'text')
    .addColumn('error', 'text')
    .addColumn('usage', 'text')
    .addColumn('cost', 'double precision', (c) => c.notNull().defaultTo(0))
    .addColumn('prompt_tokens', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('completion_tokens', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('latency_ms', 'double precision')
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addPrimaryKeyConstraint('run_generations_pk', ['run_id', 'launch_index', 'side', 'position'])
    .execute();
}
