import { type Compilable, CompiledQuery, type Kysely } from 'kysely';
import type { Database } from './schema.js';

/** Statement texts of multi-row inserts, per dialect adapter: building one costs more than running it. */
const statements = new WeakMap<object, Map<string, string>>();

/** Runs one statement once per parameter list, synchronously, on the connection of the current transaction. */
export type RowRunner = (text: string, rows: readonly unknown[][]) => void;
const rowRunners = new WeakMap<object, RowRunner>();

/**
 * For a synchronous driver (better-sqlite3): inside a transaction, `insertRows` then runs one compiled
 * single-row statement per row, which SQLite does faster than one long multi-row statement (no
 * thousands of parameters to bind at once, no per-row await). Outside a transaction the connection may be
 * shared with someone else's transaction, so the ordinary path is kept there.
 */
export function registerRowRunner(db: Kysely<Database>, run: RowRunner): void {
  rowRunners.set(db.getExecutor().adapter, run);
}

/**
 * Inserts rows in batches of `batchSize` with the statement `build` makes, building each distinct
 * statement (same name, row count and columns) once per dialect and reusing its text afterwards. Rows must
 * share their key order (build them with one function), so the parameters are the values row by row.
 */
export async function insertRows<R extends object>(
  db: Kysely<Database>,
  name: string,
  rows: readonly R[],
  batchSize: number,
  build: (batch: R[]) => Compilable,
): Promise<void> {
  const adapter = db.getExecutor().adapter;
  let cache = statements.get(adapter);
  if (!cache) {
    cache = new Map();
    statements.set(adapter, cache);
  }
  const runner = db.isTransaction ? rowRunners.get(adapter) : undefined;
  if (runner && rows.length > 0) {
    const columns = Object.keys(rows[0]!) as (keyof R)[];
    const key = `${name}|row|${columns.join(',')}`;
    let text = cache.get(key);
    if (text === undefined) {
      const compiled = build([rows[0]!]).compile();
      if (compiled.parameters.length === columns.length) {
        text = compiled.sql;
        cache.set(key, text);
      }
    }
    if (text !== undefined) {
      runner(
        text,
        rows.map((r) => columns.map((c) => r[c])),
      );
      return;
    }
  }
  for (let i = 0; i < rows.length; i += batchSize) {
    const batch = rows.slice(i, i + batchSize);
    const columns = Object.keys(batch[0]!) as (keyof R)[];
    const parameters = batch.flatMap((r) => columns.map((c) => r[c]));
    const key = `${name}|${batch.length}|${columns.join(',')}`;
    let text = cache.get(key);
    if (text === undefined) {
      const compiled = build(batch).compile();
      // Rows whose keys differ would not line up with the cached text: run them as built, uncached.
      if (compiled.parameters.length !== parameters.length) {
        await db.executeQuery(compiled);
        continue;
      }
      text = compiled.sql;
      cache.set(key, text);
    }
    await db.executeQuery(CompiledQuery.raw(text, parameters));
  }
}
