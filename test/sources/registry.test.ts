import type { Kysely } from 'kysely';
import { describe, expect, it } from 'vitest';
import type { Database } from '../../src/db/schema.js';
import type { ReadSide } from '../../src/engine/plan.js';
import { BUILT_IN_SOURCES, createSourceRegistry, UnknownSourceKind } from '../../src/sources/registry.js';
import { syntheticSource } from '../fixtures/synthetic-source.js';

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
  const { kindOf, sideView, ports: sourcePorts } = createSourceRegistry();

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

  it("knows the kinds it was built with, and no registry sees another one's", () => {
    const withSynthetic = createSourceRegistry([...BUILT_IN_SOURCES, syntheticSource]);
    const builtIn = createSourceRegistry();
    expect(withSynthetic.kind('synthetic')).toBe(syntheticSource);
    expect(withSynthetic.all().map((k) => k.type)).toEqual([
      ...BUILT_IN_SOURCES.map((k) => k.type),
      'synthetic',
    ]);
    expect(() => builtIn.kind('synthetic')).toThrow(UnknownSourceKind);
    expect(builtIn.sidesIssues({ sample: { type: 'synthetic', count: 3 } })).toEqual([
      expect.objectContaining({ loc: ['body', 'sample', 'type'], type: 'enum' }),
    ]);
    expect(withSynthetic.sidesIssues({ sample: { type: 'synthetic', count: 3 } })).toEqual([]);
    // Each shows only its own kinds: an unknown one by its type and range alone.
    expect(builtIn.sideView(side('synthetic'))).toEqual({ type: 'synthetic', range: '0:5' });
    expect(
      withSynthetic.sampleNeeds({
        sample: side('synthetic'),
        ground_truth: side('synthetic'),
        baseline: null,
      }),
    ).toEqual([]);
    expect(() =>
      builtIn.sampleNeeds({ sample: side('synthetic'), ground_truth: side('synthetic'), baseline: null }),
    ).toThrow(UnknownSourceKind);
  });

  it('refuses two kinds of one name', () => {
    const impostor = { ...syntheticSource, type: 'dataset' };
    expect(() => createSourceRegistry([...BUILT_IN_SOURCES, impostor])).toThrow(
      /a source kind 'dataset' is already registered/,
    );
    // The same kind listed twice is one kind.
    expect(createSourceRegistry([...BUILT_IN_SOURCES, BUILT_IN_SOURCES[0]!]).all()).toHaveLength(
      BUILT_IN_SOURCES.length,
    );
  });
});
