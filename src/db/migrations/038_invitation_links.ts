import type { Kysely } from 'kysely';

/**
 * Invitations by link, and the dashboard's own accounts (a name and a password) that such a link creates
 * on a server without identity providers. A link's token is kept as its SHA-256 only; a password as its
 * scrypt hash.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('invitation_links')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('organization_id', 'text', (c) =>
      c.notNull().references('organizations.id').onDelete('cascade'),
    )
    // Where the invited person lands (a project of the organization), or null: the organization's page.
    .addColumn('project_id', 'text')
    .addColumn('token_hash', 'text', (c) => c.notNull().unique())
    .addColumn('role', 'text', (c) => c.notNull())
    .addColumn('invited_by', 'text')
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addColumn('expires_at', 'double precision', (c) => c.notNull())
    .addColumn('used_at', 'text')
    .addColumn('used_by', 'text')
    .addColumn('revoked_at', 'text')
    .execute();
  await db.schema
    .createIndex('invitation_links_by_org')
    .on('invitation_links')
    .columns(['organization_id', 'created_at'])
    .execute();

  await db.schema
    .createTable('password_accounts')
    .addColumn('user_id', 'text', (c) => c.primaryKey().references('users.id').onDelete('cascade'))
    // Lower case; the name one signs in with.
    .addColumn('username', 'text', (c) => c.notNull().unique())
    .addColumn('password_hash', 'text', (c) => c.notNull())
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addColumn('updated_at', 'text', (c) => c.notNull())
    .execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.dropTable('password_accounts').execute();
  await db.schema.dropTable('invitation_links').execute();
}
