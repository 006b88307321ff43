import { type Kysely, sql } from 'kysely';
import type { Database } from '../db/schema.js';

/** Rows deleted per statement: each delete is short, so that writers are never held up for long. */
export const PRUNE_BATCH = 1_000;

/** The trace store's tables that expire: the time column each is pruned by, and its primary key. */
const EXPIRING = {
  spans: { time: 'received_at', key: ['project_id', 'trace_id', 'span_id'] },
  traces: { time: 'updated_at', key: ['project_id', 'trace_id'] },
  span_log_events: { time: 'received_at', key: ['project_id', 'trace_id', 'span_id', 'event_key'] },
} as const satisfies Record<string, { time: string; key: readonly string[] }>;

/**
 * Deletes the table's rows whose time column is before `cutoff`, `batch` keys at a time (a select with a
 * LIMIT, then a delete by key per row in one transaction), until none is left; returns how many went.
 */
async function pruneTable(
  db: Kysely<Database>,
  table: keyof typeof EXPIRING,
  cutoff: string,
  batch: number,
): Promise<number> {
  const { time, key } = EXPIRING[table];
  const columns = sql.join(key.map((k) => sql.ref(k)));
  let deleted = 0;
  for (;;) {
    const { rows } = await sql<Record<string, string>>`
      select ${columns} from ${sql.table(table)} where ${sql.ref(time)} < ${cutoff} limit ${batch}
    `.execute(db);
    if (rows.length === 0) break;
    await db.transaction().execute(async (trx) => {
      for (const row of rows) {
        const match = sql.join(
          key.map((k) => sql`${sql.ref(k)} = ${row[k]}`),
          sql` and `,
        );
        await sql`delete from ${sql.table(table)} where ${match}`.execute(trx);
      }
    });
    deleted += rows.length;
    if (rows.length < batch) break;
  }
  return deleted;
}

/**
 * Deletes spans and GenAI log events received before `cutoff` (ISO time) and traces last added to before
 * it, in batches of `batch` rows, until none is left. Returns how many of each went.
 */
export async function pruneTraces(
  db: Kysely<Database>,
  cutoff: string,
  batch = PRUNE_BATCH,
): Promise<{ spans: number; traces: number; log_events: number }> {
  return {
    spans: await pruneTable(db, 'spans', cutoff, batch),
    traces: await pruneTable(db, 'traces', cutoff, batch),
    log_events: await pruneTable(db, 'span_log_events', cutoff, batch),
  };
}
