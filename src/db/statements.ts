import { type Compilable, CompiledQuery, type Kysely, type QueryResult, type RawBuilder } from 'kysely';
import type { Database } from './schema.js';

/**
 * Statements run once per chunk or per sample whose text never changes, only their parameters: Kysely
 * builds and compiles a query on every call (an operation tree walked twice), which costs more than
 * SQLite takes to run a short statement. A cached statement is compiled once per dialect adapter; later
 * calls pass the parameters to its text as they are.
 */
const texts = new WeakMap<object, Map<string, string>>();

/** The statement texts kept for `db`'s dialect adapter (shared by cached statements and bulk inserts). */
export function statementTexts(db: Kysely<Database>): Map<string, string> {
  const adapter = db.getExecutor().adapter;
  let cache = texts.get(adapter);
  if (!cache) {
    cache = new Map<string, string>();
    texts.set(adapter, cache);
  }
  return cache;
}

/**
 * Makes `build` a cached statement named `name`. `build` must place each of its parameters in the
 * statement once, in order, and nothing else (no value computed inside it). That is checked on the
 * first call, by compiling it with stand-ins for the parameters; a statement that fails the check is
 * built on every call, as before.
 */
export function cachedStatement<P extends readonly unknown[], R = unknown>(
  name: string,
  build: (db: Kysely<Database>, ...params: P) => Compilable<R> | RawBuilder<R>,
): (db: Kysely<Database>, ...params: P) => Promise<QueryResult<R>> {
  const compile = (db: Kysely<Database>, params: P): CompiledQuery<R> => {
    const built = build(db, ...params);
    return 'isRawBuilder' in built ? built.compile(db) : built.compile();
  };
  return (db, ...params) => {
    const cache = statementTexts(db);
    let text = cache.get(name);
    if (text === undefined) {
      // Compiled with stand-ins, so that a parameter placed twice, out of order or computed is seen.
      const marks = params.map((_, i) => `\u0000${name}:${i}`);
      const compiled = compile(db, marks as unknown as P);
      const exact =
        compiled.parameters.length === marks.length && compiled.parameters.every((p, i) => p === marks[i]);
      if (!exact) return db.executeQuery(compile(db, params));
      text = compiled.sql;
      cache.set(name, text);
    }
    return db.executeQuery(CompiledQuery.raw(text, [...params]) as CompiledQuery<R>);
  };
}
