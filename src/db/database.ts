import fs from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { Kysely, Migrator, PostgresDialect, SqliteDialect, sql } from 'kysely';
import { registerRowRunner } from './bulk.js';
import { migrationProvider } from './migrations/index.js';
import type { Database } from './schema.js';

/** What the domain may rely on, independent of which engine stores the data. */
export interface DialectCapabilities {
  name: 'sqlite' | 'postgres';
  supportsReturning: boolean;
  /** Several processes may write at once (a server pool rather than one file). */
  sharedAcrossProcesses: boolean;
  /** `SELECT … FOR UPDATE SKIP LOCKED`: concurrent claimers take different rows without waiting. */
  supportsSkipLocked: boolean;
}

export interface DatabaseHandle {
  db: Kysely<Database>;
  capabilities: DialectCapabilities;
  /** Resolves when the database answers a trivial query; rejects otherwise. */
  ping(): Promise<void>;
  migrate(): Promise<string[]>;
  close(): Promise<void>;
}

/**
 * The database holds every project's traffic and sealed credentials: like the generated secrets it is
 * readable by its owner alone. The file is created 0600 before SQLite opens it (SQLite gives its -wal
 * and -shm files the database file's mode), in a directory created 0700. An existing file keeps the
 * mode its operator gave it.
 */
function createPrivately(file: string): void {
  fs.mkdirSync(path.dirname(file), { recursive: true, mode: 0o700 });
  try {
    fs.closeSync(fs.openSync(file, 'wx', 0o600));
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
  }
}

/**
 * better-sqlite3 is a native module: installed under one Node.js and run under another, it fails to
 * load with a bare NODE_MODULE_VERSION message. Says what happened and what to run instead.
 */
export function explainNativeModule(err: unknown): Error {
  const message = err instanceof Error ? err.message : String(err);
  const versions = /NODE_MODULE_VERSION (\d+)[\s\S]*?NODE_MODULE_VERSION (\d+)/.exec(message);
  if (!versions) return err instanceof Error ? err : new Error(message);
  return new Error(
    `better-sqlite3 was built for another Node.js (module version ${versions[1]}; this is Node.js ` +
      `${process.version}, module version ${versions[2]}). Rebuild it for this Node.js with ` +
      '`npm rebuild better-sqlite3` (or reinstall with `npm ci`), then start again.',
    { cause: err },
  );
}

/**
 * From Node.js 24.19, an addon compiled against its headers registers a cleanup hook per native object,
 * and better-sqlite3 12 can abort the process (`Assertion failed: (env) != nullptr`) when it finalizes
 * a statement outside a JavaScript context. Said once at start, with what to do about it.
 */
export function sqliteRuntimeWarning(node = process.versions.node, addon?: string): string | null {
  const [major = 0, minor = 0] = node.split('.').map(Number);
  if (major < 24 || (major === 24 && minor < 19)) return null;
  const version =
    addon ?? (createRequire(import.meta.url)('better-sqlite3/package.json') as { version: string }).version;
  if (!version.startsWith('12.')) return null;
  return (
    `Node.js ${node} with better-sqlite3 ${version}: the process may abort when SQLite statements are ` +
    'garbage-collected (better-sqlite3 13 needs Node.js 22 or newer). Use Node.js 22, or 24.18 and older, ' +
    'for the embedded SQLite database, or PostgreSQL (EVALGATE_DATABASE_URL).'
  );
}

async function openSqlite(file: string): Promise<Kysely<Database>> {
  const { default: SQLite } = await import('better-sqlite3');
  const warning = sqliteRuntimeWarning();
  if (warning) process.emitWarning(warning, { code: 'EVALGATE_SQLITE_RUNTIME' });
  if (file !== ':memory:') createPrivately(file);
  let conn: InstanceType<typeof SQLite>;
  try {
    conn = new SQLite(file);
  } catch (err) {
    throw explainNativeModule(err);
  }
  conn.pragma('journal_mode = WAL');
  conn.pragma('synchronous = NORMAL');
  conn.pragma('foreign_keys = ON');
  conn.pragma('busy_timeout = 5000');
  // better-sqlite3 compiles a statement on every prepare(); the same texts come back call after call
  // (and multi-row inserts are long), so compiled statements are kept, the most recent few hundred.
  const statements = new Map<string, ReturnType<typeof conn.prepare>>();
  const database = {
    close: () => conn.close(),
    prepare(text: string) {
      let statement = statements.get(text);
      if (statement) {
        statements.delete(text);
      } else {
        statement = conn.prepare(text);
        if (statements.size >= 500) statements.delete(statements.keys().next().value as string);
      }
      statements.set(text, statement);
      return statement;
    },
  };
  const db = new Kysely<Database>({ dialect: new SqliteDialect({ database }) });
  registerRowRunner(db, (text, rows, changed) => {
    const statement = database.prepare(text);
    let changes = 0;
    for (let i = 0; i < rows.length; i++) {
      const n = statement.run(rows[i]!).changes;
      changes += n;
      if (changed) changed[i] = n > 0;
    }
    return changes;
  });
  return db;
}

const ignore = () => {};

/** The longest a PostgreSQL query may take before the client gives up on it. */
const QUERY_TIMEOUT_MS = 60_000;

async function openPostgres(url: string): Promise<Kysely<Database>> {
  // Loaded lazily: the embedded mode never needs the PostgreSQL driver.
  const { default: pg } = await import('pg');
  // Every query has a deadline: a server that stops answering (a network partition, a hung host) fails
  // the query after QUERY_TIMEOUT_MS (503 at the HTTP edge) instead of holding its caller forever.
  const pool = new pg.Pool({
    connectionString: url,
    max: 10,
    connectionTimeoutMillis: 5000,
    query_timeout: QUERY_TIMEOUT_MS,
  });
  // A client whose server goes away (a restart: 57P01, a crash, a cut connection) emits 'error', and an
  // 'error' event without a listener ends the process. The pool listens to idle clients only; a client
  // checked out between two queries (Kysely holds one for a whole transaction) has no listener of the
  // pool's, so every client gets one of its own for its lifetime. Nothing is lost by ignoring the event:
  // the query in flight, or the next one, fails with the error (503 at the HTTP edge), and the pool
  // discards the broken client when it is released.
  pool.on('connect', (client) => client.on('error', ignore));
  pool.on('error', ignore);
  return new Kysely<Database>({ dialect: new PostgresDialect({ pool }) });
}

/**
 * Whether every migration of this build is recorded as applied, by one query: a start on a current
 * database (every start but the first after an upgrade) skips the migrator's table checks, lock and
 * reads. Anything else (no migration table yet, one missing, one this build does not know) is left to
 * the migrator, which applies, waits or refuses as before.
 */
async function isCurrent(db: Kysely<Database>): Promise<boolean> {
  let applied: Set<string>;
  try {
    const { rows } = await sql<{ name: string }>`select name from kysely_migration`.execute(db);
    applied = new Set(rows.map((r) => r.name));
  } catch {
    return false;
  }
  const known = Object.keys(await migrationProvider.getMigrations());
  return applied.size === known.length && known.every((name) => applied.has(name));
}

export async function openDatabase(url: string): Promise<DatabaseHandle> {
  const isSqlite = url.startsWith('sqlite:');
  const db = isSqlite ? await openSqlite(url.slice('sqlite:'.length)) : await openPostgres(url);
  const capabilities: DialectCapabilities = isSqlite
    ? { name: 'sqlite', supportsReturning: true, sharedAcrossProcesses: false, supportsSkipLocked: false }
    : { name: 'postgres', supportsReturning: true, sharedAcrossProcesses: true, supportsSkipLocked: true };
  return {
    db,
    capabilities,
    async ping() {
      await sql`select 1`.execute(db);
    },
    async migrate() {
      if (await isCurrent(db)) return [];
      const migrator = new Migrator({ db, provider: migrationProvider });
      const { error, results } = await migrator.migrateToLatest();
      if (error) throw error;
      return (results ?? []).filter((r) => r.status === 'Success').map((r) => r.migrationName);
    },
    async close() {
      await db.destroy();
    },
  };
}

/** True when a driver error is a unique-constraint violation, on either dialect. */
export function isUniqueViolation(err: unknown): boolean {
  if (typeof err !== 'object' || err === null || !('code' in err)) return false;
  const code = (err as { code: unknown }).code;
  return code === '23505' || code === 'SQLITE_CONSTRAINT_UNIQUE' || code === 'SQLITE_CONSTRAINT_PRIMARYKEY';
}

/** True when a driver error is a foreign-key violation, on either dialect. */
export function isForeignKeyViolation(err: unknown): boolean {
  if (typeof err !== 'object' || err === null || !('code' in err)) return false;
  const code = (err as { code: unknown }).code;
  return code === '23503' || code === 'SQLITE_CONSTRAINT_FOREIGNKEY';
}

const UNAVAILABLE_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ETIMEDOUT',
  'EPIPE',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'ENOTFOUND',
  'EAI_AGAIN',
  '57P01', // admin_shutdown: the server is stopping or restarting
  '57P02', // crash_shutdown
  '57P03', // cannot_connect_now: starting up or shutting down
  '53300', // too_many_connections
  '3D000', // invalid_catalog_name: the database is gone
  'SQLITE_CANTOPEN',
]);

/**
 * True when an error means the database cannot be reached or cannot take work now (as opposed to a
 * wrong query): PostgreSQL's connection errors (class 08, shutdowns, refused or cut sockets) and
 * SQLite's SQLITE_BUSY, which better-sqlite3 reports once the busy timeout has passed.
 */
export function isDatabaseUnavailable(err: unknown): boolean {
  if (!(err instanceof Error)) return false;
  const code = (err as { code?: unknown }).code;
  if (typeof code === 'string') {
    if (UNAVAILABLE_CODES.has(code) || code.startsWith('08') || code.startsWith('SQLITE_BUSY')) return true;
    // object_not_in_prerequisite_state is other things too; with this text, the database refuses connections.
    if (code === '55000' && /not currently accepting connections/i.test(err.message)) return true;
  }
  return /connection is not open|Connection terminated|not queryable|timeout exceeded when trying to connect|driver has already been destroyed|Query read timeout/i.test(
    err.message,
  );
}

/** True when a database handle was closed for good: waiting for it to come back is pointless. */
export function isDatabaseClosed(err: unknown): boolean {
  return (
    err instanceof Error && /driver has already been destroyed|connection is not open/i.test(err.message)
  );
}
