import { type Compilable, CompiledQuery, type Kysely } from 'kysely';
import type { Database } from './schema.js';
import { statementTexts } from './statements.js';

/**
 * Runs one statement once per parameter list, synchronously, on the connection of the current transaction;
 * returns the rows it changed.
 */
export type RowRunner = (text: string, rows: readonly unknown[][], changed?: boolean[]) => number;
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
 * The synchronous per-row runner for `db` when it is a transaction of a synchronous driver, else undefined.
 * Given `changed`, the runner sets `changed[i]` to whether row i changed anything (ON CONFLICT DO NOTHING
 * skipped it or not).
 */
export function rowRunnerOf(db: Kysely<Database>): RowRunner | undefined {
  return db.isTransaction ? rowRunners.get(db.getExecutor().adapter) : undefined;
}

/** The row counts a multi-row statement is built for, below a full batch: few texts, each compiled once. */
const PART_ROWS = [256, 128, 64, 32, 16, 8, 4, 2, 1];

/**
 * How many of `left` rows the next statement takes: a full batch, else the largest of PART_ROWS that
 * fits. A batch of any size is then a few statements whose texts are cached, rather than one statement
 * of its own size built and compiled anew (which costs more than running it).
 */
export function statementRows(left: number, batchSize: number): number {
  if (left >= batchSize) return batchSize;
  return PART_ROWS.find((n) => n <= left) ?? left;
}

/**
 * Inserts rows in batches of `batchSize` with the statement `build` makes, building each distinct
 * statement (same name, row count and columns) once per dialect and reusing its text afterwards; a
 * partial batch is sent as statements of the few sizes of `statementRows`. Rows must
 * share their key order (build them with one function), so the parameters are the values row by row.
 * Returns the number of rows the database reports inserted (rows skipped by ON CONFLICT DO NOTHING are not).
 */
export async function insertRows<R extends object>(
  db: Kysely<Database>,
  name: string,
  rows: readonly R[],
  batchSize: number,
  build: (batch: R[]) => Compilable,
): Promise<number> {
  if (rows.length === 0) return 0;
  const adapter = db.getExecutor().adapter;
  // Multi-row insert texts, kept with the cached statements: building one costs more than running it.
  const cache = statementTexts(db);
  const columns = Object.keys(rows[0]!) as (keyof R)[];
  const valuesOf = (r: R) => columns.map((c) => r[c]);
  /** The statement's cached text, or the statement as built when its parameters do not line up with the rows'. */
  const statementFor = (batch: R[], parameters: number): string | CompiledQuery => {
    const key = `insert:${name}|${batch.length}|${columns.join(',')}`;
    const cached = cache.get(key);
    if (cached !== undefined) return cached;
    const compiled = build(batch).compile();
    // Rows whose keys differ would not line up with a cached text: run them as built, uncached.
    if (compiled.parameters.length !== parameters) return compiled;
    cache.set(key, compiled.sql);
    return compiled.sql;
  };
  const runner = db.isTransaction ? rowRunners.get(adapter) : undefined;
  if (runner) {
    const single = statementFor([rows[0]!], columns.length);
    if (typeof single === 'string') return runner(single, rows.map(valuesOf));
  }
  let inserted = 0;
  for (let i = 0, size = 0; i < rows.length; i += size) {
    size = statementRows(rows.length - i, batchSize);
    const batch = rows.slice(i, i + size);
    const parameters = batch.flatMap(valuesOf);
    const statement = statementFor(batch, parameters.length);
    const result = await db.executeQuery(
      typeof statement === 'string' ? CompiledQuery.raw(statement, parameters) : statement,
    );
    inserted += Number(result.numAffectedRows ?? 0);
  }
  return inserted;
}
