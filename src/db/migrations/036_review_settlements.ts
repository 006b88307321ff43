import type { Kysely } from 'kysely';

/**
 * Settled answers of human review: where an item's reviewers disagree on an evaluator, the answer that
 * counts (by majority, one reviewer's, or one given by whoever settles it), one row per item and evaluator.
 * The reviewers' own answers stay as they are.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('annotation_settlements')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('project_id', 'text', (c) => c.notNull().references('projects.id').onDelete('cascade'))
    .addColumn('queue_id', 'text', (c) => c.notNull().references('annotation_queues.id').onDelete('cascade'))
    .addColumn('item_id', 'text', (c) => c.notNull().references('annotation_items.id').onDelete('cascade'))
    .addColumn('evaluator_id', 'text', (c) => c.notNull())
    .addColumn('score', 'double precision')
    .addColumn('label', 'text')
    .addColumn('passed', 'integer')
    .addColumn('method', 'text', (c) => c.notNull())
    .addColumn('review_id', 'text')
    .addColumn('comment', 'text')
    .addColumn('settled_by', 'text', (c) => c.notNull())
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addUniqueConstraint('annotation_settlements_item_evaluator', ['item_id', 'evaluator_id'])
    .execute();
  await db.schema
    .createIndex('annotation_settlements_by_queue')
    .on('annotation_settlements')
    .columns(['queue_id', 'item_id'])
    .execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.dropTable('annotation_settlements').execute();
}
