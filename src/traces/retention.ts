import type { Kysely } from 'kysely';
import type { Database } from '../db/schema.js';

/** Rows deleted per statement: each delete is short, so that writers are never held up for long. */
export const PRUNE_BATCH = 1_000;

/**
 * Deletes spans received before `cutoff` (ISO time) and traces last added to before it, in batches of
 * `batch` rows (a key subquery with a LIMIT, which both databases take), until none is left. Returns how
 * many of each went.
 */
export async function pruneTraces(
  db: Kysely<Database>,
  cutoff: string,
  batch = PRUNE_BATCH,
): Promise<{ spans: number; traces: number }> {
  const out = { spans: 0, traces: 0 };
  for (;;) {
    const keys = await db
      .selectFrom('spans')
      .select(['project_id', 'trace_id', 'span_id'])
      .where('received_at', '<', cutoff)
      .limit(batch)
      .execute();
    if (keys.length === 0) break;
    await db.transaction().execute(async (trx) => {
      for (const k of keys) {
        await trx
          .deleteFrom('spans')
          .where('project_id', '=', k.project_id)
          .where('trace_id', '=', k.trace_id)
          .where('span_id', '=', k.span_id)
          .execute();
      }
    });
    out.spans += keys.length;
    if (keys.length < batch) break;
  }
  for (;;) {
    const keys = await db
      .selectFrom('traces')
      .select(['project_id', 'trace_id'])
      .where('updated_at', '<', cutoff)
      .limit(batch)
      .execute();
    if (keys.length === 0) break;
    await db.transaction().execute(async (trx) => {
      for (const k of keys) {
        await trx
          .deleteFrom('traces')
          .where('project_id', '=', k.project_id)
          .where('trace_id', '=', k.trace_id)
          .execute();
      }
    });
    out.traces += keys.length;
    if (keys.length < batch) break;
  }
  return out;
}
