import type { Kysely } from 'kysely';

// Datasets, the model registry and task logs. Migrations see an untyped database (see 001).
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('datasets')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('project_id', 'text', (c) => c.notNull().references('projects.id'))
    .addColumn('label', 'text', (c) => c.notNull())
    .addColumn('description', 'text')
    .addColumn('metadata', 'text', (c) => c.notNull())
    .addColumn('item_count', 'integer', (c) => c.notNull())
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addColumn('updated_at', 'text', (c) => c.notNull())
    .addUniqueConstraint('datasets_project_label', ['project_id', 'label'])
    .execute();
  await db.schema
    .createIndex('datasets_project_created')
    .on('datasets')
    .columns(['project_id', 'created_at', 'id'])
    .execute();

  // One row per item; the primary key is the (dataset_id, position) index that range reads walk.
  await db.schema
    .createTable('dataset_items')
    .addColumn('dataset_id', 'text', (c) => c.notNull().references('datasets.id').onDelete('cascade'))
    .addColumn('position', 'integer', (c) => c.notNull())
    .addColumn('data', 'text', (c) => c.notNull())
    .addPrimaryKeyConstraint('dataset_items_pk', ['dataset_id', 'position'])
    .execute();

  await db.schema
    .createTable('models')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('project_id', 'text', (c) => c.notNull().references('projects.id'))
    .addColumn('label', 'text', (c) => c.notNull())
    .addColumn('provider', 'text', (c) => c.notNull())
    .addColumn('base_url', 'text', (c) => c.notNull())
    .addColumn('upstream_model', 'text', (c) => c.notNull())
    // AES-256-GCM under the server's secret key; never the clear credential.
    .addColumn('api_key_encrypted', 'text')
    .addColumn('api_key_last4', 'text')
    .addColumn('input_price_per_mtok', 'double precision')
    .addColumn('output_price_per_mtok', 'double precision')
    .addColumn('context_window', 'integer')
    .addColumn('default_parameters', 'text', (c) => c.notNull())
    .addColumn('fallbacks', 'text', (c) => c.notNull())
    .addColumn('metadata', 'text', (c) => c.notNull())
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addColumn('updated_at', 'text', (c) => c.notNull())
    .addUniqueConstraint('models_project_label', ['project_id', 'label'])
    .execute();
  await db.schema
    .createIndex('models_project_created')
    .on('models')
    .columns(['project_id', 'created_at', 'id'])
    .execute();

  // The last seq handed out per container. Bumping it inside the transaction that inserts the logs
  // row-locks it, so writers in any number of processes get disjoint, gap-free ranges.
  await db.schema
    .createTable('task_log_counters')
    .addColumn('container_id', 'text', (c) => c.primaryKey().references('containers.id').onDelete('cascade'))
    .addColumn('last_seq', 'bigint', (c) => c.notNull())
    .execute();

  await db.schema
    .createTable('task_logs')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('project_id', 'text', (c) => c.notNull())
    .addColumn('container_id', 'text', (c) => c.notNull().references('containers.id').onDelete('cascade'))
    .addColumn('seq', 'bigint', (c) => c.notNull())
    .addColumn('model', 'text', (c) => c.notNull())
    .addColumn('input', 'text', (c) => c.notNull())
    .addColumn('output', 'text')
    .addColumn('request', 'text', (c) => c.notNull())
    .addColumn('response', 'text', (c) => c.notNull())
    .addColumn('usage', 'text')
    .addColumn('latency_ms', 'double precision', (c) => c.notNull())
    .addColumn('cost', 'double precision', (c) => c.notNull())
    .addColumn('status', 'text', (c) => c.notNull())
    .addColumn('error', 'text')
    .addColumn('metadata', 'text', (c) => c.notNull())
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addUniqueConstraint('task_logs_container_seq', ['container_id', 'seq'])
    .execute();
}
