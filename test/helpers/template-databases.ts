import { createHash, randomBytes } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { openDatabase } from '../../src/db/database.js';
import { type FreshDatabase, freshDatabase, PG_ADMIN_URL, type TestDb, testDbKind } from './databases.js';

/**
 * Databases already at the latest schema, for tests that start the app (the harness): each is still a
 * database of its own, but copied from one migrated once rather than migrated again. Running every
 * migration took most of a harness start on PostgreSQL (a second of round trips per database) and a
 * tenth of one on SQLite; the copy is a single statement (`CREATE DATABASE … TEMPLATE`) or a file copy.
 *
 * The template is named after a hash of the migrations' sources, so an edited or added migration gets a
 * template of its own, and test runs of other checkouts that share the PostgreSQL server (with other
 * migrations) never use or change this one. The app still runs its migrations on the copy, and finds
 * them all applied.
 */

const MIGRATIONS_DIR = fileURLToPath(new URL('../../src/db/migrations/', import.meta.url));

let hash: string | null = null;

/** The first 12 hex digits of a hash over every migration's file name and source. */
function migrationsHash(): string {
  if (hash) return hash;
  const h = createHash('sha256');
  for (const name of fs.readdirSync(MIGRATIONS_DIR).sort()) {
    h.update(name)
      .update('\0')
      .update(fs.readFileSync(path.join(MIGRATIONS_DIR, name)))
      .update('\0');
  }
  hash = h.digest('hex').slice(0, 12);
  return hash;
}

async function migrate(url: string): Promise<void> {
  const handle = await openDatabase(url);
  try {
    await handle.migrate();
  } finally {
    await handle.close();
  }
}

let sqliteTemplate: Promise<string> | null = null;

/**
 * A migrated SQLite file in the system's temporary directory, made once per hash. It is written under a
 * name of its own and renamed into place, so a process that finds it finds it whole; processes that
 * race to make it each rename a complete copy.
 */
function sqliteTemplateFile(): Promise<string> {
  sqliteTemplate ??= (async () => {
    const file = path.join(os.tmpdir(), `evalgate-test-template-${migrationsHash()}.db`);
    if (fs.existsSync(file)) return file;
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'evalgate-template-'));
    try {
      const building = path.join(dir, 'evalgate.db');
      // Closing the database checkpoints its write-ahead log into the file: the file is the whole database.
      await migrate(`sqlite:${building}`);
      fs.renameSync(building, file);
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
    return file;
  })();
  sqliteTemplate.catch(() => {
    sqliteTemplate = null;
  });
  return sqliteTemplate;
}

type PgClient = InstanceType<typeof import('pg')['default']['Client']>;

async function withAdmin<T>(work: (admin: PgClient) => Promise<T>): Promise<T> {
  const { default: pg } = await import('pg');
  const admin = new pg.Client({ connectionString: PG_ADMIN_URL });
  await admin.connect();
  try {
    return await work(admin);
  } finally {
    await admin.end();
  }
}

function pgUrl(name: string): string {
  const url = new URL(PG_ADMIN_URL);
  url.pathname = `/${name}`;
  return url.toString();
}

let pgTemplate: Promise<string> | null = null;

/**
 * A migrated PostgreSQL database to copy from, made once per hash on the server: the first process to
 * want it takes an advisory lock, migrates a database of its own and renames it into place; the others
 * wait on the lock and then find it.
 */
function pgTemplateName(): Promise<string> {
  pgTemplate ??= withAdmin(async (admin) => {
    const name = `evalgate_template_${migrationsHash()}`;
    const exists = async () =>
      (await admin.query('SELECT 1 FROM pg_database WHERE datname = $1', [name])).rowCount === 1;
    if (await exists()) return name;
    await admin.query("SELECT pg_advisory_lock(hashtext('evalgate_test_template'))");
    try {
      if (await exists()) return name;
      const building = `evalgate_template_building_${randomBytes(6).toString('hex')}`;
      await admin.query(`CREATE DATABASE ${building}`);
      try {
        await migrate(pgUrl(building));
        await admin.query(`ALTER DATABASE ${building} RENAME TO ${name}`);
      } catch (err) {
        await admin.query(`DROP DATABASE IF EXISTS ${building} WITH (FORCE)`);
        throw err;
      }
      return name;
    } finally {
      await admin.query("SELECT pg_advisory_unlock(hashtext('evalgate_test_template'))");
    }
  });
  pgTemplate.catch(() => {
    pgTemplate = null;
  });
  return pgTemplate;
}

/** PostgreSQL refuses to copy a database another session is connected to (55006); that passes. */
async function createFromTemplate(admin: PgClient, name: string, template: string): Promise<void> {
  for (let attempt = 0; ; attempt++) {
    try {
      await admin.query(`CREATE DATABASE ${name} TEMPLATE ${template}`);
      return;
    } catch (err) {
      if ((err as { code?: string }).code !== '55006' || attempt >= 50) throw err;
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  }
}

/** A new database of the suite's kind at the latest schema, and a data directory of its own. */
export async function migratedDatabase(kind: TestDb = testDbKind()): Promise<FreshDatabase> {
  if (kind === 'sqlite') {
    const template = await sqliteTemplateFile();
    const fresh = await freshDatabase('sqlite');
    const file = fresh.url.slice('sqlite:'.length);
    fs.copyFileSync(template, file);
    // As the server creates it: readable by its owner alone.
    fs.chmodSync(file, 0o600);
    return fresh;
  }
  const template = await pgTemplateName();
  const name = `evalgate_test_${randomBytes(6).toString('hex')}`;
  await withAdmin((admin) => createFromTemplate(admin, name, template));
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'evalgate-test-'));
  return {
    url: pgUrl(name),
    dataDir,
    async drop() {
      await withAdmin((admin) => admin.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`));
      fs.rmSync(dataDir, { recursive: true, force: true });
    },
  };
}
