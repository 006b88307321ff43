import { type Compilable, CompiledQuery, type Kysely } from 'kysely';
import type { Database } from './schema.js';

/** Statement texts of multi-row inserts, per dialect adapter: building one costs more than running it. */
const statements = new WeakMap<object, Map<string, string>>();

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
