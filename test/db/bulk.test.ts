import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { insertRows, statementRows } from '../../src/db/bulk.js';
import { type DatabaseHandle, openDatabase } from '../../src/db/database.js';
import type { Database } from '../../src/db/schema.js';
import { statementTexts } from '../../src/db/statements.js';
import { type FreshDatabase, freshDatabase } from '../helpers/databases.js';

type OrgRow = Database['organizations'];

let fresh: FreshDatabase;
let handle: DatabaseHandle;

beforeEach(async () => {
  fresh = await freshDatabase();
  handle = await openDatabase(fresh.url);
  await handle.migrate();
});

afterEach(async () => {
  await handle.close();
  await fresh.drop();
});

const org = (i: number): OrgRow => ({
  id: `org_${String(i).padStart(5, '0')}`,
  name: `name ${i} 'quoted' ✓`,
  created_at: new Date(Date.UTC(2026, 0, 1, 0, 0, i)).toISOString(),
});

async function stored(): Promise<OrgRow[]> {
  return handle.db.selectFrom('organizations').selectAll().orderBy('id').execute();
}

/** Rows already stored (same id) are skipped, as the log and sample writers expect. */
function insertOrgs(db: DatabaseHandle['db'], rows: OrgRow[]): Promise<number> {
  return insertRows(db, 'organizations', rows, 500, (batch) =>
    db
      .insertInto('organizations')
      .values(batch)
      .onConflict((oc) => oc.column('id').doNothing()),
  );
}

describe('insertRows', () => {
  it('stores every row with its values, inside a transaction and outside one', async () => {
    const inside = Array.from({ length: 1203 }, (_, i) => org(i));
    const outside = Array.from({ length: 701 }, (_, i) => org(2000 + i));
    await handle.db.transaction().execute((trx) => insertOrgs(trx, inside));
    await insertOrgs(handle.db, outside);
    expect(await stored()).toEqual([...inside, ...outside]);
  });

  it('skips rows that conflict, on both paths', async () => {
    const first = Array.from({ length: 10 }, (_, i) => org(i));
    expect(await insertOrgs(handle.db, first)).toBe(10);
    const again = Array.from({ length: 20 }, (_, i) => ({ ...org(i), name: `other ${i}` }));
    // Both paths report only the rows they inserted: the 10 new ones.
    expect(await handle.db.transaction().execute((trx) => insertOrgs(trx, again))).toBe(10);
    const more = Array.from({ length: 25 }, (_, i) => org(i));
    expect(await insertOrgs(handle.db, more)).toBe(5);
    const rows = await stored();
    expect(rows).toHaveLength(25);
    expect(rows.slice(0, 10)).toEqual(first);
    expect(rows[15]!.name).toBe('other 15');
  });

  it('belongs to the transaction: a transaction that fails stores none of its rows', async () => {
    const rows = Array.from({ length: 600 }, (_, i) => org(i));
    await expect(
      handle.db.transaction().execute(async (trx) => {
        await insertOrgs(trx, rows);
        expect(await trx.selectFrom('organizations').select('id').execute()).toHaveLength(600);
        throw new Error('rolled back');
      }),
    ).rejects.toThrow('rolled back');
    expect(await stored()).toEqual([]);
  });

  it('fails the transaction on a row the database refuses, storing nothing', async () => {
    const rows = [org(1), { ...org(2), name: org(1).name }];
    await expect(
      handle.db
        .transaction()
        .execute((trx) =>
          insertRows(trx, 'organizations', rows, 500, (b) => trx.insertInto('organizations').values(b)),
        ),
    ).rejects.toThrow();
    expect(await stored()).toEqual([]);
  });

  it('sends a batch of any size as statements of a few sizes, each text built once', async () => {
    const sizes = (n: number, batch: number) => {
      const out: number[] = [];
      for (let left = n; left > 0; left -= out.at(-1)!) out.push(statementRows(left, batch));
      return out;
    };
    expect(sizes(1203, 500)).toEqual([500, 500, 128, 64, 8, 2, 1]);
    expect(sizes(97, 500)).toEqual([64, 32, 1]);
    expect(sizes(10, 8)).toEqual([8, 2]);
    expect(sizes(3, 2)).toEqual([2, 1]);
    // Outside a transaction (the multi-row path on both databases): the texts kept are of those sizes only.
    let next = 0;
    for (const n of [97, 33, 81, 7, 150]) {
      await insertOrgs(
        handle.db,
        Array.from({ length: n }, () => org(next++)),
      );
    }
    expect(await stored()).toHaveLength(next);
    const kept = [...statementTexts(handle.db).keys()]
      .filter((k) => k.startsWith('insert:organizations|'))
      .map((k) => Number(k.split('|')[1]))
      .sort((a, b) => a - b);
    expect(kept).toEqual([1, 2, 4, 16, 32, 64, 128]);
  });
});
