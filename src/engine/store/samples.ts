import type { Kysely, Selectable } from 'kysely';
import { insertRows } from '../../db/bulk.js';
import type { Database, RunGenerationTable, RunSampleTable } from '../../db/schema.js';
import { cachedStatement } from '../../db/statements.js';
import { addStoredRows } from './transitions.js';

/** Per-sample rows and generated outputs: stored once each, never overwritten. */

type Db = Kysely<Database>;

/**
 * Stores per-sample rows, each once (a position already stored is skipped, never overwritten), and adds the
 * number actually inserted to the run's progress in the same transaction. What the calls behind them cost
 * is counted apart, as the calls return (the run's ledger).
 */
export async function insertSamples(db: Db, runId: string, rows: RunSampleTable[]): Promise<number> {
  if (rows.length === 0) return 0;
  return db.transaction().execute(async (tx) => {
    // 25 columns a row: 500 rows stay well under SQLite's bound-parameter limit. The statement text is
    // built once per batch size and reused (see insertRows).
    const inserted = await insertRows(tx, 'run_samples', rows, 500, (batch) =>
      tx
        .insertInto('run_samples')
        .values(batch)
        .onConflict((oc) => oc.columns(['run_id', 'launch_index', 'evaluator_id', 'position']).doNothing()),
    );
    if (inserted > 0) await addStoredRows(tx, runId, inserted, null);
    return inserted;
  });
}

/** Stores generated outputs once each (what their calls cost is counted apart, by the run's ledger). */
export async function insertGenerations(db: Db, rows: RunGenerationTable[]): Promise<void> {
  if (rows.length === 0) return;
  await db
    .insertInto('run_generations')
    .values(rows)
    .onConflict((oc) => oc.columns(['run_id', 'launch_index', 'side', 'position']).doNothing())
    .execute();
}

// Read before every chunk: a cached statement (db/statements.ts).
const donePairs = cachedStatement(
  'run_samples.done',
  (db, runId: string, launch: number, from: number, to: number) =>
    db
      .selectFrom('run_samples')
      .select(['evaluator_id', 'position'])
      .where('run_id', '=', runId)
      .where('launch_index', '=', launch)
      .where('position', '>=', from)
      .where('position', '<', to),
);

/** The (evaluator, position) pairs of a launch already stored within [from, to). */
export async function donePositions(
  db: Db,
  runId: string,
  launch: number,
  from: number,
  to: number,
): Promise<Set<string>> {
  const { rows } = await donePairs(db, runId, launch, from, to);
  return new Set(rows.map((r) => `${r.evaluator_id}:${r.position}`));
}

export async function storedGenerations(
  db: Db,
  runId: string,
  launch: number,
  side: string,
  from: number,
  to: number,
): Promise<Map<number, Selectable<RunGenerationTable>>> {
  const rows = await db
    .selectFrom('run_generations')
    .selectAll()
    .where('run_id', '=', runId)
    .where('launch_index', '=', launch)
    .where('side', '=', side)
    .where('position', '>=', from)
    .where('position', '<', to)
    .execute();
  return new Map(rows.map((r) => [Number(r.position), r]));
}
