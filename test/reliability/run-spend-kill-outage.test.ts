/**
 * Issue 36, must-show 2: a run's spend through a worker killed with SIGKILL and a PostgreSQL outage,
 * counted against the provider. A generate-and-judge run over a few hundred positions, executed by
 * worker processes beside a `serve` that executes nothing; the generation model and the judge model are
 * two mock providers, so each one's answered calls are counted apart (an answer counts once its last
 * byte was written, whether or not the worker lived to read it). Mid-run both providers hold their
 * answers, so that every call they answered has returned to its worker; one worker is then SIGKILLed
 * with calls in flight, the private PostgreSQL is stopped for a few seconds while another worker goes on,
 * and a third worker finishes the run. At the end every position is scored once and the run's `spend`
 * equals the providers' answered calls × the price of a call. The project's budget counts the same plus,
 * for each call the killed worker was waiting on, the reservation it never settled (no less: calls the
 * provider answered are never missing from it, through the outage either).
 *
 * Runs on a private PostgreSQL server (stopping the suite's shared one would break every other test): in
 * the PostgreSQL project only.
 */
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type MockReply, type MockUpstream, startMockUpstream } from '../fixtures/mock-upstream.js';
import type { FreshDatabase } from '../helpers/databases.js';
import { testDbKind } from '../helpers/databases.js';
import { type Harness, startHarness } from '../helpers/harness.js';
import { type EvalgateProcess, startEvalgate } from '../helpers/processes.js';
import { waitFor } from '../helpers/wait.js';
import { type PrivatePostgres, startPrivatePostgres } from '../outage/servers.js';

const POSITIONS = 300;
const CHUNK = 10;
/** Every answer is 10 prompt and 5 completion tokens at 2 and 10 USD per million tokens. */
const PRICES = { input_price_per_mtok: 2, output_price_per_mtok: 10 };
const CALL_COST = (10 * 2 + 5 * 10) / 1e6;
/** What a call's reservation holds for its output: 4,096 tokens (no `max_tokens`) at 10 USD per million. */
const RESERVED_OUTPUT = (4096 * 10) / 1e6;
/** Its input estimate (a token per 3 characters at 2 USD per million) for requests under 6,000 characters. */
const RESERVED_INPUT_BOUND = (2000 * 2) / 1e6;
/** Long enough for the run's counters to be written behind the calls (the ledger's flush is 250 ms). */
const SETTLE_MS = 1500;

/** Answers are held while `held` is set, and released (to a live worker or a dead socket) after. */
let held: Promise<void> | null = null;
let release: () => void = () => {};
const hold = () => {
  held = new Promise((r) => {
    release = r;
  });
};
const letGo = () => {
  held = null;
  release();
};

const answer = (reply: MockReply) => async (): Promise<MockReply> => {
  if (held) await held;
  return { ...reply, promptTokens: 10, completionTokens: 5 };
};

describe.skipIf(testDbKind() !== 'postgres')('a run through a worker kill and a PostgreSQL outage', () => {
  let pg: PrivatePostgres;
  let db: FreshDatabase;
  let gen: MockUpstream;
  let judge: MockUpstream;
  let h: Harness;
  let env: Record<string, string>;
  const workers: EvalgateProcess[] = [];
  const worker = async () => {
    const w = await startEvalgate(['worker'], env, /Evalgate worker/, 60_000);
    workers.push(w);
    return w;
  };

  beforeAll(async () => {
    pg = await startPrivatePostgres();
    db = await pg.freshDatabase();
    gen = await startMockUpstream({ reply: answer({ text: 'an answer' }), latencyMs: 10, record: false });
    judge = await startMockUpstream({
      reply: answer({ json: { score: 0.75, reasoning: 'ok' } }),
      latencyMs: 10,
      record: false,
    });
    env = {
      EVALGATE_DATABASE_URL: db.url,
      EVALGATE_DATA_DIR: db.dataDir,
      EVALGATE_KEY_PEPPER: 'run-spend-kill-outage-pepper-0123',
      EVALGATE_RUN_CHUNK_SIZE: String(CHUNK),
      EVALGATE_WORKER_CONCURRENCY: '3',
      EVALGATE_MODEL_CONCURRENCY: '6',
      EVALGATE_RUN_LEASE_MS: '2000',
      EVALGATE_RUN_POLL_MS: '50',
      EVALGATE_MODEL_CACHE_MS: '600000',
    };
    h = await startHarness({ database: db, env: { ...env, EVALGATE_SERVE_EXECUTES: '0' } });
    for (const [label, mock] of [
      ['gen', gen],
      ['judge', judge],
    ] as const) {
      const r = await h.call('POST', '/v1/models', {
        body: { label, base_url: mock.baseUrl, upstream_model: label, ...PRICES },
      });
      expect(r.status, r.text).toBe(201);
    }
    expect((await h.call('POST', '/v1/containers', { body: { label: 'c' } })).status).toBe(201);
    const items = Array.from({ length: POSITIONS }, (_, i) => ({ input: `question ${i}` }));
    expect((await h.call('POST', '/v1/datasets', { body: { label: 'd', items } })).status).toBe(201);
    const ev = await h.call('POST', '/v1/evaluators', {
      body: { type: 'judge', name: 'j', model: 'judge', prompt: 'Rate {{output}} for {{input}}' },
    });
    expect(ev.status, ev.text).toBe(201);
    const budget = await h.call('PUT', '/v1/projects/current/budget', {
      body: { limit_usd: 1000, period: 'total' },
    });
    expect(budget.status, budget.text).toBe(200);
  }, 120_000);

  afterAll(async () => {
    letGo();
    await Promise.all(workers.map((w) => w.kill()));
    await h?.close();
    await gen?.close();
    await judge?.close();
    await db?.drop();
    await pg?.destroy();
  });

  const answered = () => gen.stats.completed + judge.stats.completed;
  const runOf = async (id: string) => (await h.call('GET', `/v1/evaluation/runs/${id}`)).body;

  it('scores every position once; the run spends exactly what the providers answered', async () => {
    const [killed] = [await worker(), await worker()];
    const created = await h.call('POST', '/v1/evaluation/runs', {
      body: {
        container: 'c',
        evaluators: ['j'],
        sample: { type: 'generate', models: ['gen'], range: `0:${POSITIONS}` },
        ground_truth: { type: 'dataset', dataset: 'd', range: `0:${POSITIONS}` },
      },
    });
    expect(created.status, created.text).toBe(201);
    const id = created.body.id as string;
    await waitFor(
      async () => Number((await runOf(id)).metrics?.progress?.done ?? 0) >= POSITIONS / 4,
      90_000,
      'a quarter of the run to be scored',
    );

    // The providers hold their answers: once nothing has been answered for a while, every answered call
    // has returned to its worker and been counted, and the workers wait on calls not answered yet.
    hold();
    for (let last = -1, t0 = Date.now(); answered() !== last; ) {
      if (Date.now() - t0 > 30_000) throw new Error('the answers did not stop');
      last = answered();
      await new Promise((r) => setTimeout(r, SETTLE_MS));
    }
    const inFlightAtKill = gen.stats.requests + judge.stats.requests - answered();
    await killed!.kill();
    const answeredAtKill = answered();
    // What the killed worker was waiting for is answered to a closed connection: not an answer.
    letGo();

    // The database goes away under the surviving worker for a few seconds.
    await new Promise((r) => setTimeout(r, 300));
    // Stopped mid-run: positions are left for the surviving worker to score through it.
    expect(Number((await runOf(id)).metrics?.progress?.done ?? 0)).toBeLessThan(POSITIONS * 0.9);
    await pg.stop();
    await new Promise((r) => setTimeout(r, 4000));
    await pg.start();
    // A new worker finishes what the killed one held (its leases expire).
    await worker();
    await waitFor(
      async () => (await h.call('GET', `/v1/evaluation/runs/${id}`)).body?.finished_at != null,
      180_000,
      'the run to end',
    );
    const run = await runOf(id);
    expect(run.status, JSON.stringify(run.error)).toBe('completed');

    // Every position scored once, its generation stored once.
    const samples = await sql<{ n: number | string; positions: number | string; scored: number | string }>`
      select count(*) as n, count(distinct position) as positions,
        sum(case when status = 'scored' then 1 else 0 end) as scored
      from run_samples where run_id = ${id}`.execute(h.app.services.db);
    const generations = await sql<{ n: number | string }>`
      select count(*) as n from run_generations where run_id = ${id}`.execute(h.app.services.db);
    expect(Number(samples.rows[0]!.n)).toBe(POSITIONS);
    expect(Number(samples.rows[0]!.positions)).toBe(POSITIONS);
    expect(Number(samples.rows[0]!.scored)).toBe(POSITIONS);
    expect(Number(generations.rows[0]!.n)).toBe(POSITIONS);
    const perEval = run.results.per_model[0].per_eval;
    expect(perEval[Object.keys(perEval)[0]!]).toMatchObject({
      num_total: POSITIONS,
      num_scored: POSITIONS,
      num_errors: 0,
    });

    // Spend: the providers' answered calls, priced; the killed worker's answered calls included.
    await new Promise((r) => setTimeout(r, SETTLE_MS));
    const calls = { gen: gen.stats.completed, judge: judge.stats.completed };
    const project = await h.call('GET', `/v1/projects/${h.admin.projectId}/budget`);
    expect(project.status).toBe(200);
    const figures = {
      run_spend_kill_outage: {
        positions: POSITIONS,
        answered_generations: calls.gen,
        answered_judge_calls: calls.judge,
        answered_at_kill: answeredAtKill,
        in_flight_at_kill: inFlightAtKill,
        closed_by_client: gen.stats.clientClosed + judge.stats.clientClosed,
        expected_spend: (calls.gen + calls.judge) * CALL_COST,
        run_spend: run.spend,
        run_generation_calls: run.metrics?.generation?.calls,
        run_judge_calls: run.metrics?.judge?.calls,
        project_spend: project.body.spend?.used_usd,
        unsettled_reservations: gen.stats.clientClosed + judge.stats.clientClosed,
      },
    };
    console.info(JSON.stringify(figures));
    expect(calls.gen).toBeGreaterThanOrEqual(POSITIONS);
    expect(calls.judge).toBeGreaterThanOrEqual(POSITIONS);
    expect(run.metrics.generation.calls).toBe(calls.gen);
    expect(run.metrics.judge.calls).toBe(calls.judge);
    expect(run.spend).toBeCloseTo((calls.gen + calls.judge) * CALL_COST, 9);
    // The project's budget counts the same, plus what the killed worker had reserved for the calls it
    // was waiting on (each call's largest cost: its output bound of 4,096 tokens and its input estimated
    // from its size) and never lived to settle. A reservation is never counted as less than it was.
    const unsettled = gen.stats.clientClosed + judge.stats.clientClosed;
    const excess = project.body.spend.used_usd - (calls.gen + calls.judge) * CALL_COST;
    expect(unsettled).toBeGreaterThan(0);
    expect(excess).toBeGreaterThanOrEqual(unsettled * RESERVED_OUTPUT - 1e-9);
    expect(excess).toBeLessThanOrEqual(unsettled * (RESERVED_OUTPUT + RESERVED_INPUT_BOUND) + 1e-9);
  }, 300_000);
});
