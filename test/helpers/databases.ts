import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

export const PG_ADMIN_URL = process.env.EVALGATE_TEST_PG_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';

export type TestDb = 'sqlite' | 'postgres';

export function testDbKind(): TestDb {
  return process.env.EVALGATE_TEST_DB === 'postgres' ? 'postgres' : 'sqlite';
}

export interface FreshDatabase {
  url: string;
  dataDir: string;
  drop(): Promise<void>;
}

/** A new, empty database of the suite's kind, and a data directory of its own. */
export async function freshDatabase(kind: TestDb = testDbKind()): Promise<FreshDatabase> {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'evalgate-test-'));
  if (kind === 'sqlite') {
    return {
      url: `sqlite:${path.join(dataDir, 'evalgate.db')}`,
      dataDir,
      async drop() {
        fs.rmSync(dataDir, { recursive: true, force: true });
      },
    };
  }
  const { default: pg } = await import('pg');
  const name = `evalgate_test_${randomBytes(6).toString('hex')}`;
  const admin = new pg.Client({ connectionString: PG_ADMIN_URL });
  await admin.connect();
  await admin.query(`CREATE DATABASE ${name}`);
  await admin.end();
  const url = new URL(PG_ADMIN_URL);
  url.pathname = `/${name}`;
  return {
    url: url.toString(),
    dataDir,
    async drop() {
      const client = new pg.Client({ connectionString: PG_ADMIN_URL });
      await client.connect();
      await client.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
      await client.end();
      fs.rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

/**
 * Takes a test database away from every connection but the caller's, until the returned function is
 * called: SQLite stays locked by another connection's exclusive transaction (writers give up after
 * their busy timeout); PostgreSQL refuses new connections and ends the open ones.
 */
export async function outage(url: string): Promise<() => Promise<void>> {
  if (url.startsWith('sqlite:')) {
    const { default: SQLite } = await import('better-sqlite3');
    const conn = new SQLite(url.slice('sqlite:'.length));
    conn.exec('BEGIN EXCLUSIVE');
    return async () => {
      conn.exec('ROLLBACK');
      conn.close();
    };
  }
  const { default: pg } = await import('pg');
  const name = new URL(url).pathname.slice(1);
  const admin = new pg.Client({ connectionString: PG_ADMIN_URL });
  await admin.connect();
  await admin.query(`ALTER DATABASE ${name} ALLOW_CONNECTIONS false`);
  await admin.query('SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = $1', [name]);
  return async () => {
    await admin.query(`ALTER DATABASE ${name} ALLOW_CONNECTIONS true`);
    await admin.end();
  };
}
