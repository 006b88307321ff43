import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type MockUpstream, startMockUpstream } from '../fixtures/mock-upstream.js';
import { type FreshDatabase, freshDatabase, testDbKind } from '../helpers/databases.js';
import { type Harness, startHarness } from '../helpers/harness.js';
import { type EvalgateProcess, startEvalgate } from '../helpers/processes.js';
import { waitFor } from '../helpers/wait.js';

/**
 * Several processes on one PostgreSQL database (and Redis for BullMQ) share a run: each position is
 * judged once, a killed process's work is taken over, and `spend` holds the call of every stored sample.
 * The API of each mode runs in this process (a harness); the other executors are real child processes.
 */

const POSITIONS = 2000;
const CHUNK = 50;
// 12 prompt and 7 completion tokens per mock answer, at 1000 and 2000 USD per million tokens.
const COST_PER_CALL = (12 * 1000 + 7 * 2000) / 1_000_000;
const PEPPER = 'scale-out-test-pepper-0123456789';

/** A mock judge whose answers can be held back (the requests wait) and released. */
function gatedJudge() {
  let open = true;
  let release: () => void = () => {};
  let opened = Promise.resolve();
  return {
    hold() {
      if (!open) return;
      open = false;
      opened = new Promise<void>((r) => {
        release = r;
      });
    },
    open() {
      open = true;
      release();
    },
    async reply() {
      if (!open) await opened;
      return { json: { score: 0.7, reasoning: 'fine' } };
    },
  };
}

for (const mode of ['inline', 'bullmq'] as const) {
  describe.skipIf(testDbKind() !== 'postgres')(`scale-out execution (${mode})`, () => {
    let db: FreshDatabase;
    let h: Harness;
    let mock: MockUpstream;
    const gate = gatedJudge();
    const others: EvalgateProcess[] = [];
    const prefix = `egtest${randomBytes(4).toString('hex')}`;
    let env: Record<string, string>;

    beforeAll(async () => {
      mock = await startMockUpstream({ reply: () => gate.reply(), record: false });
      db = await freshDatabase('postgres');
      env = {
        EVALGATE_DATABASE_URL: db.url,
        EVALGATE_KEY_PEPPER: PEPPER,
        EVALGATE_EXECUTOR: mode,
        EVALGATE_REDIS_URL: 'redis://127.0.0.1:6379',
        EVALGATE_REDIS_PREFIX: prefix,
        EVALGATE_RUN_LEASE_MS: '3000',
        EVALGATE_RUN_POLL_MS: '100',
        EVALGATE_RUN_CHUNK_SIZE: String(CHUNK),
        EVALGATE_MODEL_CONCURRENCY: '16',
        EVALGATE_WORKER_CONCURRENCY: '4',
      };
      h = await startHarness({ database: db, env: { ...env, EVALGATE_DATA_DIR: db.dataDir } });
      await h.call('POST', '/v1/models', {
        body: {
          label: 'judge',
          provider: 'openai-compatible',
          base_url: mock.baseUrl,
          upstream_model: 'j',
          input_price_per_mtok: 1000,
          output_price_per_mtok: 2000,
        },
      });
      await h.call('POST', '/v1/containers', { body: { label: 'c' } });
      const items = Array.from({ length: POSITIONS }, (_, i) => ({ input: `q${i}`, output: `a${i}` }));
      expect((await h.call('POST', '/v1/datasets', { body: { label: 'big', items } })).status).toBe(201);
      await h.call('POST', '/v1/evaluators', {
        body: { type: 'judge', name: 'j', model: 'judge', prompt: 'Rate {{output}}' },
      });
      // The second executor: another `serve` (inline), or two `evalgate worker`s (BullMQ; the API
      // in this process only enqueues).
      const childEnv = { ...env, EVALGATE_DATA_DIR: db.dataDir };
      if (mode === 'inline') {
        others.push(await startEvalgate(['serve', '--port', '0'], childEnv, /listening on/));
      } else {
        for (let i = 0; i < 2; i++) {
          others.push(await startEvalgate(['worker', '--environment', 'main'], childEnv, /Evalgate worker/));
        }
      }
    }, 90_000);

    afterAll(async () => {
      gate.open();
      await Promise.all(others.map((p) => p.kill()));
      await h?.close();
      await mock?.close();
      await db?.drop();
    });

    const body = {
      container: 'c',
      evaluators: ['j'],
      sample: { type: 'dataset', dataset: 'big', range: `0:${POSITIONS}` },
      ground_truth: { type: 'dataset', dataset: 'big', range: `0:${POSITIONS}` },
    };

    async function finished(id: string, timeoutMs: number) {
      await waitFor(
        async () =>
          ['completed', 'error', 'cancelled'].includes(
            (await h.call('GET', `/v1/evaluation/runs/${id}`)).body.status,
          ),
        timeoutMs,
      );
      return (await h.call('GET', `/v1/evaluation/runs/${id}`)).body;
    }

    const chunkOwners = async (runId: string) =>
      await h.services.db
        .selectFrom('run_chunks')
        .select(['owner', 'status', 'from_position', 'to_position'])
        .where('run_id', '=', runId)
        .execute();

    it('shares a run between processes: every position judged exactly once', async () => {
      mock.reset();
      const run = await h.call('POST', '/v1/evaluation/runs', { body });
      expect(run.status).toBe(201);
      const done = await finished(run.body.id, 60_000);
      expect(done.status).toBe('completed');
      expect(
        done.results.per_model[0].per_eval[Object.keys(done.results.per_model[0].per_eval)[0]!],
      ).toMatchObject({
        num_total: POSITIONS,
        num_scored: POSITIONS,
      });
      expect(mock.stats.requests).toBe(POSITIONS);
      expect(done.metrics.judge.calls).toBe(POSITIONS);
      expect(done.spend).toBeCloseTo(POSITIONS * COST_PER_CALL, 6);
      const owners = new Set((await chunkOwners(run.body.id)).map((c) => c.owner));
      // More than one process executed chunks of the run.
      expect(owners.size).toBeGreaterThan(1);
      expect(done.results.per_model[0].launch_call_id).toMatch(/^job_/);
    }, 90_000);

    it('finishes a run whose executing process was killed, paying for every call its ledger counted', async () => {
      mock.reset();
      const victim = others.at(-1)!;
      const victimId = (
        await h.services.db
          .selectFrom('workers')
          .select('id')
          .where('pid', '=', victim.pid)
          .executeTakeFirstOrThrow()
      ).id;
      const run = await h.call('POST', '/v1/evaluation/runs', { body });
      const runId: string = run.body.id;
      // Let part of the run through, with the victim holding chunks, then hold every answer back.
      await waitFor(async () => {
        const chunks = await chunkOwners(runId);
        return (
          mock.stats.completed >= 600 && chunks.some((c) => c.owner === victimId && c.status === 'pending')
        );
      }, 30_000);
      gate.hold();
      // The victim's answered calls are all in: what it holds now is what dies with it.
      await new Promise((r) => setTimeout(r, 1500));
      const pendingOfVictim = (await chunkOwners(runId))
        .filter((c) => c.owner === victimId && c.status === 'pending')
        .reduce((n, c) => n + (Number(c.to_position) - Number(c.from_position)), 0);
      await victim.kill();
      const killedAt = Date.now();
      gate.open();

      // The wait outlasts the bound, so that the bound below is what is checked.
      const done = await finished(runId, 90_000);
      expect(Date.now() - killedAt).toBeLessThan(60_000);
      expect(done.status).toBe('completed');
      const perEval = done.results.per_model[0].per_eval[Object.keys(done.results.per_model[0].per_eval)[0]!];
      expect(perEval).toMatchObject({ num_total: POSITIONS, num_scored: POSITIONS, num_errors: 0 });
      const rows = await h.services.db
        .selectFrom('run_samples')
        .select((eb) => [
          eb.fn.countAll<string>().as('n'),
          eb.fn.count<string>('position').distinct().as('positions'),
        ])
        .where('run_id', '=', runId)
        .executeTakeFirstOrThrow();
      expect(Number(rows.n)).toBe(POSITIONS);
      expect(Number(rows.positions)).toBe(POSITIONS);
      // At most the positions plus what the killed process held when it died.
      expect(mock.stats.requests).toBeLessThanOrEqual(POSITIONS + pendingOfVictim);
      // A call is counted as it returns, not with the sample it produced: spend covers every stored
      // sample's call and the victim's answered calls that reached its ledger (asked again after the kill,
      // they are paid again, as the provider bills them); only calls answered in its last moments are lost.
      const counted = done.metrics.judge.calls;
      expect(counted).toBeGreaterThanOrEqual(POSITIONS);
      expect(counted).toBeLessThanOrEqual(mock.stats.completed);
      expect(done.spend).toBeCloseTo(counted * COST_PER_CALL, 6);
      expect(mock.stats.completed - counted).toBeLessThanOrEqual(pendingOfVictim);
    }, 180_000);
  });
}
