import type { Kysely } from 'kysely';

/**
 * Spend limits: `budgets` holds the limit of an API key or a project; `budget_spend` what each scope
 * spent in each period, the durable side of the counters the gateway and the run workers check (seeded
 * from it after a restart).
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('budgets')
    .addColumn('scope', 'text', (c) => c.notNull())
    .addColumn('scope_id', 'text', (c) => c.notNull())
    .addColumn('project_id', 'text', (c) => c.notNull().references('projects.id').onDelete('cascade'))
    .addColumn('limit_usd', 'double precision', (c) => c.notNull())
    .addColumn('period', 'text', (c) => c.notNull())
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addColumn('updated_at', 'text', (c) => c.notNull())
    .addPrimaryKeyConstraint('budgets_pk', ['scope', 'scope_id'])
    .execute();
  await db.schema.createIndex('budgets_by_project').on('budgets').columns(['project_id']).execute();
  await db.schema
    .createTable('budget_spend')
    .addColumn('scope', 'text', (c) => c.notNull())
    .addColumn('scope_id', 'text', (c) => c.notNull())
    .addColumn('period_start', 'text', (c) => c.notNull())
    .addColumn('used_usd', 'double precision', (c) => c.notNull())
    .addColumn('updated_at', 'text', (c) => c.notNull())
    .addPrimaryKeyConstraint('budget_spend_pk', ['scope', 'scope_id', 'period_start'])
    .execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.dropTable('budget_spend').execute();
  await db.schema.dropTable('budgets').execute();
}
