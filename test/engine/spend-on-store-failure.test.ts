import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type DatabaseHandle, openDatabase } from '../../src/db/database.js';
import { type ChunkRef, Engine } from '../../src/engine/work.js';
import { type MockUpstream, startMockUpstream } from '../fixtures/mock-upstream.js';
import { type FreshDatabase, freshDatabase } from '../helpers/databases.js';
import { engineDeps, judgeRunOver, modelsBySlug } from '../helpers/engine-ports.js';
import { modelAt } from '../llm/layer-helpers.js';

/*
 * A chunk whose judge calls were answered (and paid) but whose rows cannot be stored: the calls' cost is
 * still counted, and the retried chunk's calls on top, so the run's spend equals what the provider
 * answered. Storing fails through a trigger that refuses inserts into run_samples, on both databases.
 */

const refuseInserts = {
  sqlite: [
    sql`CREATE TRIGGER refuse_samples BEFORE INSERT ON run_samples BEGIN SELECT RAISE(ABORT, 'database away'); END`,
  ],
  postgres: [
    sql`CREATE FUNCTION refuse_samples() RETURNS trigger AS $$ BEGIN RAISE EXCEPTION 'database away'; END $$ LANGUAGE plpgsql`,
    sql`CREATE TRIGGER refuse_samples BEFORE INSERT ON run_samples FOR EACH ROW EXECUTE FUNCTION refuse_samples()`,
  ],
};
const allowInserts = {
  sqlite: [sql`DROP TRIGGER refuse_samples`],
  postgres: [sql`DROP TRIGGER refuse_samples ON run_samples`, sql`DROP FUNCTION refuse_samples()`],
};

describe('spend when a chunk cannot store its rows', () => {
  let fresh: FreshDatabase;
  let database: DatabaseHandle;
  let mock: MockUpstream;

  beforeAll(async () => {
    fresh = await freshDatabase();
    database = await openDatabase(fresh.url);
    await database.migrate();
    mock = await startMockUpstream({ reply: () => ({ json: { score: 1, reasoning: 'fine' } }) });
  });
  afterAll(async () => {
    await mock?.close();
    await database?.close();
    await fresh?.drop();
  });

  it('counts the calls of the failed attempt and of the retry: spend equals the answered calls', async () => {
    const { db } = database;
    const kind = fresh.url.startsWith('sqlite:') ? 'sqlite' : 'postgres';
    const resolveModel = modelsBySlug({ judge: modelAt(mock.baseUrl, { slug: 'judge' }) });
    const { runId, queue } = await judgeRunOver(
      db,
      fresh.dataDir,
      resolveModel,
      [
        { input: 'a', output: 'one' },
        { input: 'b', output: 'two' },
        { input: 'c', output: 'three' },
      ],
      'Rate {{output}}',
    );
    const run = { id: runId };
    // The ledger's warning about a failed write is expected here; nothing else may warn.
    const engine = new Engine(engineDeps(db, { resolveModel, chunkSize: 3, warn: () => {} }));
    try {
      const chunks = (await engine.prepareRun(run.id)) as ChunkRef[];
      expect(chunks).toHaveLength(1);
      const chunk = chunks[0]!;
      for (const statement of refuseInserts[kind]) await statement.execute(db);
      await expect(engine.runChunk(chunk, new AbortController().signal)).rejects.toThrow();
      const answeredFirst = mock.stats.requests;
      expect(answeredFirst).toBe(3);
      for (const statement of allowInserts[kind]) await statement.execute(db);
      await engine.runChunk(chunk, new AbortController().signal);
      await engine.completeChunk(chunk, 'test-worker');
      expect(await engine.finalizeRun(run.id)).toBe('completed');
    } finally {
      await engine.close();
      await queue.close();
    }
    // Every answered call was asked twice (the first attempt's rows were never stored), and all are counted.
    expect(mock.stats.requests).toBe(6);
    const stored = await db
      .selectFrom('runs')
      .select(['judge_calls', 'judge_cost', 'spend'])
      .where('id', '=', run.id)
      .executeTakeFirstOrThrow();
    expect(Number(stored.judge_calls)).toBe(6);
    const samples = await db
      .selectFrom('run_samples')
      .select(['cost', 'status'])
      .where('run_id', '=', run.id)
      .execute();
    expect(samples.map((s) => s.status)).toEqual(['scored', 'scored', 'scored']);
    // The same judge call each time: six answered calls cost six times one call's cost.
    const perCall = Number(samples[0]!.cost);
    expect(perCall).toBeGreaterThan(0);
    expect(Number(stored.spend)).toBeCloseTo(6 * perCall, 12);
  });
});
