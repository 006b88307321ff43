import type { Kysely } from 'kysely';

/**
 * Human review: annotation queues (a rubric over evaluators' scales), their items (a task log, a session or
 * a run's position), who holds or has done each item (`annotation_assignments`, with a claim's expiry), and
 * the human scores themselves (`annotation_reviews`, one row per item, reviewer and rubric evaluator; a
 * correction supersedes a row and keeps it). Evaluators gain a declared scale and the catalog template they
 * came from; every per-sample row gains the hash of the exact judge prompt that scored it.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema.alterTable('evaluators').addColumn('scale', 'text').execute();
  await db.schema.alterTable('evaluators').addColumn('template', 'text').execute();
  await db.schema.alterTable('run_samples').addColumn('prompt_hash', 'text').execute();

  await db.schema
    .createTable('annotation_queues')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('project_id', 'text', (c) => c.notNull().references('projects.id').onDelete('cascade'))
    .addColumn('name', 'text', (c) => c.notNull())
    .addColumn('description', 'text')
    .addColumn('evaluators', 'text', (c) => c.notNull())
    .addColumn('comment', 'integer', (c) => c.notNull())
    .addColumn('reviewers_per_item', 'integer', (c) => c.notNull())
    .addColumn('claim_seconds', 'integer', (c) => c.notNull())
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addColumn('updated_at', 'text', (c) => c.notNull())
    .addUniqueConstraint('annotation_queues_name_unique', ['project_id', 'name'])
    .execute();

  await db.schema
    .createTable('annotation_items')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('queue_id', 'text', (c) => c.notNull().references('annotation_queues.id').onDelete('cascade'))
    .addColumn('kind', 'text', (c) => c.notNull())
    .addColumn('ref', 'text', (c) => c.notNull())
    .addColumn('run_id', 'text')
    .addColumn('launch_index', 'integer')
    .addColumn('position', 'integer')
    .addColumn('source', 'text', (c) => c.notNull())
    .addColumn('state', 'text', (c) => c.notNull())
    .addColumn('needed', 'integer', (c) => c.notNull())
    .addColumn('taken', 'integer', (c) => c.notNull())
    .addColumn('reviews', 'integer', (c) => c.notNull())
    .addColumn('flag', 'text')
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addColumn('updated_at', 'text', (c) => c.notNull())
    .addUniqueConstraint('annotation_items_ref_unique', ['queue_id', 'kind', 'ref'])
    .execute();
  await db.schema
    .createIndex('annotation_items_by_state')
    .on('annotation_items')
    .columns(['queue_id', 'state', 'id'])
    .execute();

  await db.schema
    .createTable('annotation_assignments')
    .addColumn('item_id', 'text', (c) => c.notNull().references('annotation_items.id').onDelete('cascade'))
    .addColumn('reviewer', 'text', (c) => c.notNull())
    .addColumn('queue_id', 'text', (c) => c.notNull())
    .addColumn('state', 'text', (c) => c.notNull())
    .addColumn('expires_at', 'bigint')
    .addColumn('updated_at', 'text', (c) => c.notNull())
    .addPrimaryKeyConstraint('annotation_assignments_pk', ['item_id', 'reviewer'])
    .execute();
  await db.schema
    .createIndex('annotation_assignments_by_queue')
    .on('annotation_assignments')
    .columns(['queue_id', 'state', 'expires_at'])
    .execute();
  await db.schema
    .createIndex('annotation_assignments_by_reviewer')
    .on('annotation_assignments')
    .columns(['queue_id', 'reviewer', 'state'])
    .execute();

  await db.schema
    .createTable('annotation_reviews')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('project_id', 'text', (c) => c.notNull().references('projects.id').onDelete('cascade'))
    .addColumn('queue_id', 'text', (c) => c.notNull().references('annotation_queues.id').onDelete('cascade'))
    .addColumn('item_id', 'text', (c) => c.notNull().references('annotation_items.id').onDelete('cascade'))
    .addColumn('evaluator_id', 'text', (c) => c.notNull())
    .addColumn('reviewer', 'text', (c) => c.notNull())
    .addColumn('score', 'double precision')
    .addColumn('label', 'text')
    .addColumn('passed', 'integer')
    .addColumn('comment', 'text')
    .addColumn('superseded_by', 'text')
    .addColumn('created_at', 'text', (c) => c.notNull())
    .execute();
  await db.schema
    .createIndex('annotation_reviews_by_item')
    .on('annotation_reviews')
    .columns(['item_id', 'reviewer'])
    .execute();
  await db.schema
    .createIndex('annotation_reviews_by_evaluator')
    .on('annotation_reviews')
    .columns(['evaluator_id', 'superseded_by'])
    .execute();
  await db.schema
    .createIndex('annotation_reviews_by_queue')
    .on('annotation_reviews')
    .columns(['queue_id', 'superseded_by'])
    .execute();
}
