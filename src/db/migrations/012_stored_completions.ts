import { type Kysely, PostgresAdapter, sql } from 'kysely';

/**
 * Stored chat completions: task logs of the chat route made with `store: true`. A partial index per
 * project in creation order, over the same predicate the stored-completions queries use, so that listing
 * them never reads the rest of the project's traffic.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  if (db.getExecutor().adapter instanceof PostgresAdapter) {
    await sql`create index task_logs_stored_chat on task_logs (project_id, created_at, id)
      where ((metadata::jsonb ->> 'route') = 'chat' and (metadata::jsonb -> 'store') = 'true'::jsonb)`.execute(
      db,
    );
  } else {
    await sql`create index task_logs_stored_chat on task_logs (project_id, created_at, id)
      where (json_extract(metadata, '$.route') = 'chat' and json_type(metadata, '$.store') = 'true')`.execute(
      db,
    );
  }
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`drop index task_logs_stored_chat`.execute(db);
}
