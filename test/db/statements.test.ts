import { sql } from 'kysely';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { type DatabaseHandle, openDatabase } from '../../src/db/database.js';
import { cachedStatement } from '../../src/db/statements.js';
import { type FreshDatabase, freshDatabase } from '../helpers/databases.js';

let fresh: FreshDatabase;
let handle: DatabaseHandle;

beforeEach(async () => {
  fresh = await freshDatabase();
  handle = await openDatabase(fresh.url);
  await handle.migrate();
  await handle.db
    .insertInto('organizations')
    .values(
      [1, 2, 3, 4].map((i) => ({
        id: `org_${i}`,
        name: `name ${i}`,
        created_at: new Date(Date.UTC(2026, 0, i)).toISOString(),
      })),
    )
    .execute();
});

afterEach(async () => {
  await handle.close();
  await fresh.drop();
});

const names = (rows: readonly { name: string }[]) => rows.map((r) => r.name);

describe('cached statements', () => {
  it('run with each call’s parameters, in and out of transactions', async () => {
    const between = cachedStatement('test.between', (db, from: string, to: string) =>
      db
        .selectFrom('organizations')
        .select('name')
        .where('id', '>=', from)
        .where('id', '<=', to)
        .orderBy('id'),
    );
    const rename = cachedStatement('test.rename', (db, name: string, id: string) =>
      db.updateTable('organizations').set({ name }).where('id', '=', id),
    );
    const { db } = handle;
    expect(names((await between(db, 'org_1', 'org_2')).rows)).toEqual(['name 1', 'name 2']);
    expect(names((await between(db, 'org_2', 'org_4')).rows)).toEqual(['name 2', 'name 3', 'name 4']);
    await db.transaction().execute(async (tx) => {
      await rename(tx, 'renamed 3', 'org_3');
      await rename(tx, 'renamed 4', 'org_4');
    });
    const changed = await rename(db, 'renamed 1', 'org_1');
    expect(Number(changed.numAffectedRows)).toBe(1);
    expect(names((await between(db, 'org_1', 'org_4')).rows)).toEqual([
      'renamed 1',
      'name 2',
      'renamed 3',
      'renamed 4',
    ]);
  });

  it('run raw SQL statements too', async () => {
    const count = cachedStatement(
      'test.count',
      (_db, prefix: string) =>
        sql<{ n: number | string }>`select count(*) as n from organizations where id like ${prefix}`,
    );
    expect(Number((await count(handle.db, 'org_%')).rows[0]?.n)).toBe(4);
    expect(Number((await count(handle.db, 'org_4%')).rows[0]?.n)).toBe(1);
    expect(Number((await count(handle.db, 'none%')).rows[0]?.n)).toBe(0);
  });

  it('are built on every call when their parameters are not the arguments in order', async () => {
    // The id is placed before the name here: a cached text would bind them the wrong way round.
    const swapped = cachedStatement('test.swapped', (db, name: string, id: string) =>
      db.selectFrom('organizations').select('name').where('id', '=', id).where('name', '=', name),
    );
    // A parameter computed inside the statement.
    const computed = cachedStatement('test.computed', (db, i: number) =>
      db.selectFrom('organizations').select('name').where('id', '=', `org_${i}`),
    );
    const { db } = handle;
    expect(names((await swapped(db, 'name 2', 'org_2')).rows)).toEqual(['name 2']);
    expect(names((await swapped(db, 'name 3', 'org_3')).rows)).toEqual(['name 3']);
    expect(names((await swapped(db, 'name 3', 'org_2')).rows)).toEqual([]);
    expect(names((await computed(db, 1)).rows)).toEqual(['name 1']);
    expect(names((await computed(db, 4)).rows)).toEqual(['name 4']);
  });
});
