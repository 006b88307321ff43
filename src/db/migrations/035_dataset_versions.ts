import { type Kysely, sql } from 'kysely';

/**
 * Datasets that grow: items are added, edited and removed, each change making a new version of the
 * dataset (the upload that created it is version 1). A row of `dataset_items` is now one version of one
 * item, valid from `valid_from` up to (not including) `valid_to` (null: still current); `item_id` is the
 * item's stable id (null on rows of an upload, whose id is their own `id` field or `<dataset>:<position>`),
 * `seq` its place in the dataset's order (an edit keeps it), `splits` the JSON array of its splits and
 * `origin` where it was made from (a task log, a span, a session, a review). `dataset_versions` says what
 * each version changed and how many items it holds.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .alterTable('datasets')
    .addColumn('version', 'integer', (c) => c.notNull().defaultTo(1))
    .execute();
  const items = db.schema.alterTable('dataset_items');
  await items.addColumn('item_id', 'text').execute();
  await items.addColumn('seq', 'bigint').execute();
  await items.addColumn('valid_from', 'integer', (c) => c.notNull().defaultTo(1)).execute();
  await items.addColumn('valid_to', 'integer').execute();
  await items.addColumn('splits', 'text').execute();
  await items.addColumn('origin', 'text').execute();
  await sql`update dataset_items set seq = position`.execute(db);
  // Reading version N walks the dataset's rows in order and keeps those valid at N.
  await db.schema
    .createIndex('dataset_items_order')
    .on('dataset_items')
    .columns(['dataset_id', 'seq', 'valid_from'])
    .execute();
  await db.schema
    .createIndex('dataset_items_item')
    .on('dataset_items')
    .columns(['dataset_id', 'item_id'])
    .execute();

  await db.schema
    .createTable('dataset_versions')
    .addColumn('dataset_id', 'text', (c) => c.notNull().references('datasets.id').onDelete('cascade'))
    .addColumn('version', 'integer', (c) => c.notNull())
    .addColumn('item_count', 'integer', (c) => c.notNull())
    .addColumn('added', 'integer', (c) => c.notNull())
    .addColumn('changed', 'integer', (c) => c.notNull())
    .addColumn('removed', 'integer', (c) => c.notNull())
    .addColumn('created_by', 'text')
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addPrimaryKeyConstraint('dataset_versions_pk', ['dataset_id', 'version'])
    .execute();
  await sql`insert into dataset_versions (dataset_id, version, item_count, added, changed, removed, created_at)
    select id, 1, item_count, item_count, 0, 0, created_at from datasets`.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.dropTable('dataset_versions').execute();
  await db.schema.dropIndex('dataset_items_item').execute();
  await db.schema.dropIndex('dataset_items_order').execute();
  // Rows that were never version 1's go with the versions.
  await sql`delete from dataset_items where valid_from > 1`.execute(db);
  for (const column of ['origin', 'splits', 'valid_to', 'valid_from', 'seq', 'item_id']) {
    await db.schema.alterTable('dataset_items').dropColumn(column).execute();
  }
  await db.schema.alterTable('datasets').dropColumn('version').execute();
}
