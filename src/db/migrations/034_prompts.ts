import type { Kysely } from 'kysely';

/**
 * Prompts: a project's named prompts, their immutable versions (messages with `{{variables}}`, declared
 * variable types, model, parameters, tools, response format, commit message, author) and movable labels
 * (`production`, `staging`, …), with every move of a label kept (`prompt_label_moves`) so that a label can
 * be rolled back. A task log made from a stored prompt names it (`prompt_id`, `prompt_version`).
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('prompts')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('project_id', 'text', (c) => c.notNull().references('projects.id').onDelete('cascade'))
    .addColumn('name', 'text', (c) => c.notNull())
    .addColumn('description', 'text')
    .addColumn('latest_version', 'integer', (c) => c.notNull())
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addColumn('updated_at', 'text', (c) => c.notNull())
    .addUniqueConstraint('prompts_name_unique', ['project_id', 'name'])
    .execute();

  await db.schema
    .createTable('prompt_versions')
    .addColumn('prompt_id', 'text', (c) => c.notNull().references('prompts.id').onDelete('cascade'))
    .addColumn('version', 'integer', (c) => c.notNull())
    .addColumn('messages', 'text', (c) => c.notNull())
    .addColumn('variables', 'text', (c) => c.notNull())
    .addColumn('model', 'text')
    .addColumn('parameters', 'text', (c) => c.notNull())
    .addColumn('tools', 'text')
    .addColumn('response_format', 'text')
    .addColumn('commit_message', 'text')
    .addColumn('author', 'text', (c) => c.notNull())
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addPrimaryKeyConstraint('prompt_versions_pk', ['prompt_id', 'version'])
    .execute();

  await db.schema
    .createTable('prompt_labels')
    .addColumn('prompt_id', 'text', (c) => c.notNull().references('prompts.id').onDelete('cascade'))
    .addColumn('name', 'text', (c) => c.notNull())
    .addColumn('version', 'integer', (c) => c.notNull())
    .addColumn('updated_by', 'text', (c) => c.notNull())
    .addColumn('updated_at', 'text', (c) => c.notNull())
    .addPrimaryKeyConstraint('prompt_labels_pk', ['prompt_id', 'name'])
    .execute();

  await db.schema
    .createTable('prompt_label_moves')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('prompt_id', 'text', (c) => c.notNull().references('prompts.id').onDelete('cascade'))
    .addColumn('label', 'text', (c) => c.notNull())
    .addColumn('action', 'text', (c) => c.notNull())
    .addColumn('from_version', 'integer')
    .addColumn('to_version', 'integer')
    .addColumn('reverted', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('moved_by', 'text', (c) => c.notNull())
    .addColumn('moved_at', 'text', (c) => c.notNull())
    .execute();
  await db.schema
    .createIndex('prompt_label_moves_by_label')
    .on('prompt_label_moves')
    .columns(['prompt_id', 'label', 'moved_at'])
    .execute();

  await db.schema.alterTable('task_logs').addColumn('prompt_id', 'text').execute();
  await db.schema.alterTable('task_logs').addColumn('prompt_version', 'integer').execute();
  await db.schema
    .createIndex('task_logs_by_prompt')
    .on('task_logs')
    .columns(['container_id', 'prompt_id', 'prompt_version'])
    .execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.dropIndex('task_logs_by_prompt').execute();
  await db.schema.alterTable('task_logs').dropColumn('prompt_version').execute();
  await db.schema.alterTable('task_logs').dropColumn('prompt_id').execute();
  await db.schema.dropTable('prompt_label_moves').execute();
  await db.schema.dropTable('prompt_labels').execute();
  await db.schema.dropTable('prompt_versions').execute();
  await db.schema.dropTable('prompts').execute();
}
