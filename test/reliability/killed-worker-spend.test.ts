/**
 * A worker SIGKILLed mid-run: the run's ledger counts each call as it returns (written within its flush
 * interval), not with the chunk's rows, so the calls of the chunks the killed worker had in flight that
 * were answered and counted stay in `spend` although their rows were never stored, and the calls asked
 * again by the next worker are counted again, as the provider counts them. `spend` is never below what
 * the stored samples cost; the calls the provider answered beyond the counted ones (answered within the
 * last flush interval before the kill) are at most those of the chunks in flight. The exact equality at a
 * quiescent kill is in run-spend-kill-outage.test.ts.
 */
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type MockUpstream, startMockUpstream } from '../fixtures/mock-upstream.js';
import { type FreshDatabase, freshDatabase } from '../helpers/databases.js';
import { type Harness, startHarness } from '../helpers/harness.js';
import { type EvalgateProcess, startEvalgate } from '../helpers/processes.js';
import { waitFor } from '../helpers/wait.js';

const POSITIONS = 256;
const CHUNK = 16;
const CONCURRENCY = 3;

let mock: MockUpstream;
let db: FreshDatabase;
let h: Harness;
let env: Record<string, string>;
const workers: EvalgateProcess[] = [];

beforeAll(async () => {
  mock = await startMockUpstream({
    // The last position of every chunk answers slowly: the rest of the chunk's calls are answered well
    // before its rows can be stored, so a kill finds answered calls whose samples are not stored.
    reply: async (req) => {
      const position = Number(/Rate a(\d+)/.exec(req.lastUserText)?.[1] ?? 0);
      if (position % CHUNK === CHUNK - 1) await new Promise((r) => setTimeout(r, 800));
      return { json: { score: 0.5, reasoning: 'ok' } };
    },
    latencyMs: 20,
    record: false,
  });
  db = await freshDatabase();
  env = {
    EVALGATE_DATABASE_URL: db.url,
    EVALGATE_DATA_DIR: db.dataDir,
    EVALGATE_KEY_PEPPER: 'killed-worker-pepper-0123456789',
    EVALGATE_RUN_CHUNK_SIZE: String(CHUNK),
    EVALGATE_WORKER_CONCURRENCY: String(CONCURRENCY),
    EVALGATE_MODEL_CONCURRENCY: '4',
    EVALGATE_RUN_LEASE_MS: '2000',
    EVALGATE_RUN_POLL_MS: '50',
  };
  // The API executes nothing: the worker processes do.
  h = await startHarness({ database: db, env: { ...env, EVALGATE_SERVE_EXECUTES: '0' } });
  const model = await h.call('POST', '/v1/models', {
    body: {
      label: 'judge',
      base_url: mock.baseUrl,
      upstream_model: 'j',
      input_price_per_mtok: 3,
      output_price_per_mtok: 15,
    },
  });
  expect(model.status).toBe(201);
  await h.call('POST', '/v1/containers', { body: { label: 'c' } });
  const items = Array.from({ length: POSITIONS }, (_, i) => ({ input: `q${i}`, output: `a${i}` }));
  expect((await h.call('POST', '/v1/datasets', { body: { label: 'd', items } })).status).toBe(201);
  await h.call('POST', '/v1/evaluators', {
    body: { type: 'judge', name: 'j', model: 'judge', prompt: 'Rate {{output}}' },
  });
}, 60_000);

afterAll(async () => {
  await Promise.all(workers.map((w) => w.kill()));
  await h?.close();
  await mock?.close();
  await db?.drop();
});

const runOf = async (id: string) => (await h.call('GET', `/v1/evaluation/runs/${id}`)).body;

describe('a worker SIGKILLed mid-run', () => {
  it('keeps the calls it counted in spend, and loses at most the calls of its chunks in flight', async () => {
    workers.push(await startEvalgate(['worker'], env, /Evalgate worker/));
    const created = await h.call('POST', '/v1/evaluation/runs', {
      body: {
        container: 'c',
        evaluators: ['j'],
        sample: { type: 'dataset', dataset: 'd', range: `0:${POSITIONS}` },
      },
    });
    expect(created.status).toBe(201);
    const id = created.body.id as string;
    await waitFor(
      async () => Number((await runOf(id)).metrics?.progress?.done ?? 0) >= POSITIONS / 3,
      60_000,
    );
    await workers[0]!.kill();
    const answeredAtKill = mock.stats.completed;
    // The chunks the dead worker held: what they had not stored is what was in flight.
    const held = await sql<{ from_position: number; to_position: number }>`
      select from_position, to_position from run_chunks where run_id = ${id} and status = 'pending'
      and owner is not null`.execute(h.app.services.db);
    const storedAtKill = await sql<{ n: number | string; calls: number | string }>`
      select count(*) as n, coalesce(sum(calls), 0) as calls from run_samples where run_id = ${id}`.execute(
      h.app.services.db,
    );
    let inFlight = 0;
    for (const c of held.rows) {
      const inChunk = await sql<{ n: number | string }>`
        select count(*) as n from run_samples where run_id = ${id}
        and position >= ${c.from_position} and position < ${c.to_position}`.execute(h.app.services.db);
      inFlight += Number(c.to_position) - Number(c.from_position) - Number(inChunk.rows[0]!.n);
    }
    const lostAtKill = answeredAtKill - Number(storedAtKill.rows[0]!.calls);

    workers.push(await startEvalgate(['worker'], env, /Evalgate worker/));
    await waitFor(async () => (await runOf(id)).status === 'completed', 90_000);
    const run = await runOf(id);
    const sums = await sql<{ n: number | string; calls: number | string; cost: number | string }>`
      select count(*) as n, coalesce(sum(calls), 0) as calls, coalesce(sum(cost), 0) as cost
      from run_samples where run_id = ${id}`.execute(h.app.services.db);
    const stored = {
      rows: Number(sums.rows[0]!.n),
      calls: Number(sums.rows[0]!.calls),
      cost: Number(sums.rows[0]!.cost),
    };
    const answered = mock.stats.completed;

    expect(stored.rows).toBe(POSITIONS);
    expect(stored.cost).toBeGreaterThan(0);
    // Every stored sample's calls are counted, and the answered calls no stored sample carries as far as
    // the killed worker counted them; never more than the provider answered.
    const counted = run.metrics.judge.calls as number;
    expect(counted).toBeGreaterThanOrEqual(stored.calls);
    expect(counted).toBeLessThanOrEqual(answered);
    // Every call costs the same here: spend is the counted calls, priced.
    expect(run.spend).toBeCloseTo((counted * stored.cost) / stored.calls, 9);
    // Calls the provider answered but the killed worker had not written: at most those of its chunks in flight.
    const lost = answered - counted;
    expect(lost).toBeGreaterThanOrEqual(0);
    expect(lost).toBeLessThanOrEqual(inFlight);
    expect(inFlight).toBeLessThanOrEqual(CONCURRENCY * CHUNK);
    console.info(
      JSON.stringify({
        killed_worker: {
          positions: POSITIONS,
          answered_calls: answered,
          stored_calls: stored.calls,
          counted_calls: counted,
          answered_not_stored: answered - stored.calls,
          answered_not_counted: lost,
          answered_not_stored_at_kill: lostAtKill,
          positions_in_flight_at_kill: inFlight,
          spend: run.spend,
          stored_cost: stored.cost,
        },
      }),
    );
  }, 180_000);
});
