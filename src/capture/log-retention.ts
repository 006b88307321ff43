import type { Kysely } from 'kysely';
import type { Database } from '../db/schema.js';

/** Task logs deleted per statement: each delete is short, so that the log writer is never held up for long. */
export const LOG_PRUNE_BATCH = 1_000;

/**
 * Deletes task logs created before `cutoff` (ISO time), `batch` at a time (one statement per batch: the ids
 * of the oldest expired logs, from the index task_logs_created), until none is left. Returns how many went.
 *
 * Nothing else is deleted with them: run samples keep their own copy of each item's input and output, so
 * an old run reads as before; a monitor position or a review item whose log is gone reads as an item
 * without input or output (counted as missing, never judged); a trace keeps its spans, a gateway call's
 * span row standing in for its log; sessions list only the logs still kept.
 */
export async function pruneTaskLogs(
  db: Kysely<Database>,
  cutoff: string,
  batch = LOG_PRUNE_BATCH,
): Promise<number> {
  let deleted = 0;
  for (;;) {
    const result = await db
      .deleteFrom('task_logs')
      .where('id', 'in', (eb) =>
        eb
          .selectFrom('task_logs')
          .select('id')
          .where('created_at', '<', cutoff)
          .orderBy('created_at')
          .limit(batch),
      )
      .executeTakeFirst();
    const n = Number(result.numDeletedRows);
    deleted += n;
    if (n < batch) return deleted;
  }
}
