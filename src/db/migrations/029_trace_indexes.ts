import { type Kysely, sql } from 'kysely';

/**
 * Indexes for the trace store's reads and for retention: the traces with an error, newest first (a
 * partial index: `GET /v1/traces?errors=true` reads and counts only those), and task logs by creation time
 * (log retention deletes the expired ones in bounded batches without scanning the table).
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createIndex('traces_errors')
    .on('traces')
    .columns(['project_id', 'started_at'])
    .where(sql.ref('error_count'), '>', sql.lit(0))
    .execute();
  await db.schema.createIndex('task_logs_created').on('task_logs').column('created_at').execute();
}
