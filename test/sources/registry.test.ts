import type { Kysely } from 'kysely';
import { describe, expect, it } from 'vitest';
import type { Database } from '../../src/db/schema.js';
import type { ReadSide } from '../../src/engine/plan.js';
import { kindOf, sideView, sourcePorts, UnknownSourceKind } from '../../src/sources/registry.js';

/** A database nothing may touch: an unknown kind must fail before any read. */
const untouchable = new Proxy(
  {},
  {
    get() {
      throw new Error('the database was used');
    },
  },
) as unknown as Kysely<Database>;

const side = (type: string): ReadSide => ({ type, ref: 'x', models: [], range: { start: 0, end: 5 } });

// No database: run once.
describe.skipIf(process.env.EVALGATE_TEST_DB === 'postgres')('the source registry', () => {
  it('refuses a side of an unknown kind instead of reading it as another kind', async () => {
    const ports = sourcePorts(untouchable);
    expect(() => ports.countItems(side('spreadsheet'))).toThrow(UnknownSourceKind);
    expect(() => ports.readItems(side('spreadsheet'), { start: 0, end: 5 })).toThrow(
      /Unknown data source type 'spreadsheet'/,
    );
    expect(() => kindOf(side('spreadsheet'))).toThrow(UnknownSourceKind);
  });

  it('shows an unknown kind by its type and range, and a stored eval-rows plan as a dataset', () => {
    expect(sideView(side('spreadsheet'))).toEqual({ type: 'spreadsheet', range: '0:5' });
    expect(sideView({ ...side('dataset'), shape: 'eval' })).toEqual({
      type: 'dataset',
      dataset: 'x',
      range: '0:5',
    });
    expect(kindOf({ ...side('dataset'), shape: 'eval' }).reads.map((r) => r.permission)).toEqual([
      'data:read',
    ]);
  });
});
