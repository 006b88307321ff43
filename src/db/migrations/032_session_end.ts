import type { Kysely } from 'kysely';

/**
 * A session can be ended explicitly (`POST /v1/sessions/{id}/end`): `ended_at` is when. A session monitor
 * scores an ended session at its next sweep instead of waiting for it to be idle; a call that joins the
 * session afterwards opens it again (`ended_at` back to null).
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema.alterTable('task_sessions').addColumn('ended_at', 'text').execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.alterTable('task_sessions').dropColumn('ended_at').execute();
}
