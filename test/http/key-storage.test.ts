import { createHmac } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createKey } from '../../src/auth/key-store.js';
import { ensureProject } from '../../src/tenancy/projects.js';
import { type Harness, startHarness } from '../helpers/harness.js';

/** Every row of every table, read straight from the database file or server, as text per cell. */
async function dumpDatabase(url: string): Promise<Map<string, Record<string, string>[]>> {
  const tables = new Map<string, Record<string, string>[]>();
  const text = (v: unknown) => (Buffer.isBuffer(v) ? v.toString('latin1') : String(v));
  const rowText = (row: Record<string, unknown>) =>
    Object.fromEntries(Object.entries(row).map(([k, v]) => [k, text(v)]));
  if (url.startsWith('sqlite:')) {
    const { default: SQLite } = await import('better-sqlite3');
    const db = new SQLite(url.slice('sqlite:'.length), { readonly: true });
    try {
      const names = db.prepare("SELECT name FROM sqlite_master WHERE type = 'table'").all() as {
        name: string;
      }[];
      for (const { name } of names) {
        tables.set(
          name,
          (db.prepare(`SELECT * FROM "${name}"`).all() as Record<string, unknown>[]).map(rowText),
        );
      }
    } finally {
      db.close();
    }
    return tables;
  }
  const { default: pg } = await import('pg');
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    const names = await client.query<{ table_name: string }>(
      "SELECT table_name FROM information_schema.tables WHERE table_schema = 'public' AND table_type = 'BASE TABLE'",
    );
    for (const { table_name } of names.rows) {
      const rows = await client.query(`SELECT * FROM "${table_name}"`);
      tables.set(table_name, rows.rows.map(rowText));
    }
  } finally {
    await client.end();
  }
  return tables;
}

let h: Harness;
beforeAll(async () => {
  h = await startHarness();
});
afterAll(async () => {
  await h.close();
});

describe('API keys at rest', () => {
  it('stores no key text, only its HMAC and a short display prefix', async () => {
    const { db } = h.app.services;
    const pepper = h.app.services.pepper;
    // Keys made the way the CLI makes them, and through the API.
    const project = await ensureProject(db, 'cli-project', 'cli-org');
    const cli = await createKey(db, pepper, { projectId: project.id, name: 'cli', permissions: ['*'] });
    const viaApi = await h.call('POST', '/v1/api-keys', {
      body: { name: 'api', permissions: ['evaluators:*'] },
    });
    expect(viaApi.status).toBe(201);
    const keys = [
      { id: h.admin.id, key: h.admin.key },
      { id: cli.view.id, key: cli.key },
      { id: viaApi.body.id, key: viaApi.body.key as string },
    ];
    // Use every key, so that anything written on use (last_used_at, logs) is in the database too.
    for (const { key } of keys) expect((await h.call('GET', '/v1/evaluators', { key })).status).toBe(200);
    const ids = keys.map((k) => k.id);
    for (let waited = 0; ; waited += 20) {
      const unused = await db
        .selectFrom('api_keys')
        .select('id')
        .where('id', 'in', ids)
        .where('last_used_at', 'is', null)
        .execute();
      if (unused.length === 0) break;
      if (waited > 3000) throw new Error('last_used_at was never written');
      await new Promise((resolve) => setTimeout(resolve, 20));
    }

    const tables = await dumpDatabase(h.database.url);
    expect(tables.has('api_keys')).toBe(true);
    const everything = [...tables.values()]
      .flatMap((rows) => rows.flatMap((r) => Object.values(r)))
      .join('\n');

    for (const { id, key } of keys) {
      expect(key).toMatch(/^eg_[0-9A-Za-z]{43}$/);
      // Nothing of the key past its 10-character display prefix: no 12-character run of it anywhere.
      for (let i = 0; i + 12 <= key.length; i++) expect(everything).not.toContain(key.slice(i, i + 12));
      const row = tables.get('api_keys')!.find((r) => r.id === id)!;
      expect(row).toBeDefined();
      expect(row.hash).toBe(createHmac('sha256', pepper).update(key).digest('hex'));
      expect(row.hash).not.toBe(key);
      expect(row.prefix).toBe(key.slice(0, 10));
      // The read really sees the stored values (so that the absence above means something).
      expect(everything).toContain(row.hash);
    }
    // And the API never hands a key out again.
    const list = await h.call('GET', '/v1/api-keys?limit=100');
    for (const { key } of keys) expect(list.text).not.toContain(key.slice(10));
  });

  it('keys with the same text under another pepper do not verify', async () => {
    const other = await startHarness({
      database: h.database,
      env: { EVALGATE_KEY_PEPPER: 'another-pepper-0123456789' },
    });
    try {
      const res = await other.call('GET', '/v1/evaluators', { key: h.admin.key });
      expect(res.status).toBe(401);
      expect((await other.call('GET', '/v1/evaluators')).status).toBe(200);
    } finally {
      await other.close();
    }
  });
});
