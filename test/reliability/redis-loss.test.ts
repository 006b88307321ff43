/**
 * A Redis that loses the run queue (restarted empty, no persistence) strands no run: the executors'
 * reconciler submits live runs whose jobs are gone again, and they complete with every position stored
 * once; a cancel during the outage ends its run; creating a run while Redis is down answers 503 within
 * seconds, says the run exists, and the run runs once Redis is back. A private redis-server
 * (`--appendonly no`), restarted empty mid-run.
 */
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createWorker, type Worker } from '../../src/executor/worker.js';
import { type MockUpstream, startMockUpstream } from '../fixtures/mock-upstream.js';
import { type Harness, startHarness } from '../helpers/harness.js';
import { waitFor } from '../helpers/wait.js';
import { type PrivateRedis, startPrivateRedis } from '../outage/servers.js';

const POSITIONS = 600;

let redis: PrivateRedis;
let mock: MockUpstream;
let h: Harness;
let worker: Worker;
let judgeId: string;

beforeAll(async () => {
  redis = await startPrivateRedis();
  mock = await startMockUpstream({
    reply: () => ({ json: { score: 0.7, reasoning: 'ok' } }),
    latencyMs: 50,
    record: false,
  });
  h = await startHarness({
    env: {
      EVALGATE_EXECUTOR: 'bullmq',
      EVALGATE_REDIS_URL: redis.url,
      EVALGATE_REDIS_PREFIX: 'loss',
      EVALGATE_RUN_CHUNK_SIZE: '20',
      EVALGATE_MODEL_CONCURRENCY: '4',
      EVALGATE_WORKER_CONCURRENCY: '2',
      EVALGATE_RUN_LEASE_MS: '2000',
      EVALGATE_RUN_RECONCILE_MS: '500',
      EVALGATE_RUN_SUBMIT_TIMEOUT_MS: '2000',
      EVALGATE_UPSTREAM_RETRY_BASE_MS: '5',
    },
  });
  worker = await createWorker(h.services);
  await worker.start();
  await h.call('POST', '/v1/models', { body: { label: 'judge', base_url: mock.baseUrl } });
  await h.call('POST', '/v1/containers', { body: { label: 'c' } });
  const items = Array.from({ length: POSITIONS }, (_, i) => ({ input: `q${i}`, output: `a${i}` }));
  expect((await h.call('POST', '/v1/datasets', { body: { label: 'many', items } })).status).toBe(201);
  const ev = await h.call('POST', '/v1/evaluators', {
    body: { type: 'judge', name: 'j', model: 'judge', prompt: 'Rate {{output}}' },
  });
  judgeId = ev.body.id;
}, 60_000);

afterAll(async () => {
  await worker?.close();
  await h?.close();
  await mock?.close();
  await redis?.destroy();
});

const body = {
  container: 'c',
  evaluators: ['j'],
  sample: { type: 'dataset', dataset: 'many', range: `0:${POSITIONS}` },
};

async function runOf(id: string): Promise<any> {
  return (await h.call('GET', `/v1/evaluation/runs/${id}`)).body;
}

async function doneOf(id: string): Promise<number> {
  return Number((await runOf(id)).metrics?.progress?.done ?? 0);
}

async function ended(id: string, ms: number): Promise<any> {
  await waitFor(
    async () => ['completed', 'error', 'cancelled'].includes((await runOf(id)).status),
    ms,
    `run ${id} ended`,
  );
  return runOf(id);
}

async function stored(id: string): Promise<{ rows: number; distinct: number }> {
  const r = await sql<{ rows: number | string; uniq: number | string }>`
    select count(*) as rows, count(distinct position) as uniq from run_samples where run_id = ${id}`.execute(
    h.app.services.db,
  );
  return { rows: Number(r.rows[0]!.rows), distinct: Number(r.rows[0]!.uniq) };
}

async function health() {
  const res = await h.call('GET', '/healthz', { key: null });
  return { status: res.status, degraded: res.headers.get('x-evalgate-degraded') };
}

describe('Redis restarted empty mid-run', () => {
  it('the run completes with every position stored once within 60 s of Redis coming back', async () => {
    const created = await h.call('POST', '/v1/evaluation/runs', { body });
    expect(created.status).toBe(201);
    const id = created.body.id as string;
    await waitFor(async () => (await doneOf(id)) >= POSITIONS / 4, 60_000, 'a quarter done').catch(
      async (e) => {
        console.info(JSON.stringify(await runOf(id)));
        throw e;
      },
    );
    await redis.stop();
    const atLoss = await doneOf(id);
    await new Promise((r) => setTimeout(r, 3000));
    await redis.start();
    const back = Date.now();
    expect(atLoss).toBeLessThan(POSITIONS);
    // Health names the lost queue until the reconciler has submitted the run again.
    const sawDegraded = await waitFor(async () => (await health()).degraded !== null, 5000).then(
      () => true,
      () => false,
    );
    const run = await ended(id, 60_000);
    const tookMs = Date.now() - back;
    expect(run.status).toBe('completed');
    expect(tookMs).toBeLessThan(60_000);
    expect(await stored(id)).toEqual({ rows: POSITIONS, distinct: POSITIONS });
    expect(run.results.per_model[0].per_eval[judgeId]).toMatchObject({
      num_scored: POSITIONS,
      num_errors: 0,
    });
    expect((await health()).degraded).toBeNull();
    console.info(
      JSON.stringify({
        redis_loss: { done_at_loss: atLoss, completed_after_ms: tookMs, health_degraded_seen: sawDegraded },
      }),
    );
  }, 150_000);

  it('a cancel during the outage answers and ends the run', async () => {
    const created = await h.call('POST', '/v1/evaluation/runs', { body });
    const id = created.body.id as string;
    await waitFor(async () => (await doneOf(id)) >= 40, 60_000, 'started');
    await redis.stop();
    try {
      const t0 = Date.now();
      const cancel = await h.call('POST', `/v1/evaluation/runs/${id}/cancel`);
      expect(cancel.status).toBe(200);
      expect(Date.now() - t0).toBeLessThan(15_000);
      const run = await ended(id, 30_000);
      expect(run.status).toBe('cancelled');
      const { rows, distinct } = await stored(id);
      expect(rows).toBe(distinct);
    } finally {
      await redis.start();
    }
  }, 120_000);
});

describe('creating a run while Redis is down', () => {
  it('answers 503 within 5 s saying the run exists, and the run runs once Redis is back', async () => {
    await redis.stop();
    let runId: string;
    try {
      const t0 = Date.now();
      const res = await h.call('POST', '/v1/evaluation/runs', { body });
      const ms = Date.now() - t0;
      expect(ms).toBeLessThan(5000);
      expect(res.status).toBe(503);
      expect(res.body.error.code).toBe('upstream_unavailable');
      expect(res.body.error.details).toMatchObject({
        dependency: 'redis',
        run_created: true,
        status: 'queued',
      });
      runId = res.body.error.details.run_id;
      expect((await runOf(runId)).status).toBe('queued');
      console.info(JSON.stringify({ submit_with_redis_down_ms: ms }));
    } finally {
      await redis.start();
    }
    const run = await ended(runId, 60_000);
    expect(run.status).toBe('completed');
    expect(await stored(runId)).toEqual({ rows: POSITIONS, distinct: POSITIONS });
  }, 120_000);
});
