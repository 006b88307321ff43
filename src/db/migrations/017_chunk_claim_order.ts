import { type Kysely, sql } from 'kysely';

/**
 * The pending chunks of a run in the order they are claimed (chunk, then launch). Claiming walks it and
 * stops at the first free chunk instead of sorting every pending chunk of the run for each claim; a
 * chunk leaves it when it is done, so it only ever holds the work still to do.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createIndex('run_chunks_pending_order')
    .on('run_chunks')
    .columns(['run_id', 'chunk_index', 'launch_index'])
    .where(sql.ref('status'), '=', 'pending')
    .execute();
}
