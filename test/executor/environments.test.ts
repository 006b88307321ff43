import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type MockUpstream, startMockUpstream } from '../fixtures/mock-upstream.js';
import { type FreshDatabase, freshDatabase, testDbKind } from '../helpers/databases.js';
import { type Harness, startHarness } from '../helpers/harness.js';
import { type EvalgateProcess, startEvalgate } from '../helpers/processes.js';
import { waitFor } from '../helpers/wait.js';

/**
 * A run's `environment` selects the pool of workers that executes it (BullMQ: a queue per environment).
 * A run of an environment with no live worker stays queued, says so, and starts when a worker appears.
 */
describe.skipIf(testDbKind() !== 'postgres')('environment routing (bullmq)', () => {
  let db: FreshDatabase;
  let h: Harness;
  let mock: MockUpstream;
  const workers: EvalgateProcess[] = [];
  let env: Record<string, string>;

  beforeAll(async () => {
    mock = await startMockUpstream({ reply: () => ({ json: { score: 1, reasoning: 'ok' } }), record: false });
    db = await freshDatabase('postgres');
    env = {
      EVALGATE_DATABASE_URL: db.url,
      EVALGATE_DATA_DIR: db.dataDir,
      EVALGATE_KEY_PEPPER: 'environments-test-pepper-0123456789',
      EVALGATE_EXECUTOR: 'bullmq',
      EVALGATE_REDIS_URL: 'redis://127.0.0.1:6379',
      EVALGATE_REDIS_PREFIX: `egtest${randomBytes(4).toString('hex')}`,
      EVALGATE_ENVIRONMENTS: 'main,a,b,nosandbox',
      EVALGATE_RUN_CHUNK_SIZE: '5',
    };
    h = await startHarness({ database: db, env });
    await h.call('POST', '/v1/models', {
      body: { label: 'judge', provider: 'openai-compatible', base_url: mock.baseUrl, upstream_model: 'j' },
    });
    await h.call('POST', '/v1/containers', { body: { label: 'c' } });
    const items = Array.from({ length: 20 }, (_, i) => ({ input: `q${i}`, output: `a${i}` }));
    await h.call('POST', '/v1/datasets', { body: { label: 'd', items } });
    await h.call('POST', '/v1/evaluators', {
      body: { type: 'judge', name: 'j', model: 'judge', prompt: 'Rate {{output}}' },
    });
    workers.push(
      await startEvalgate(['worker', '--environment', 'a', '--metrics-port', '0'], env, /Evalgate worker/),
    );
  }, 60_000);

  afterAll(async () => {
    await Promise.all(workers.map((w) => w.kill()));
    await h?.close();
    await mock?.close();
    await db?.drop();
  });

  const launch = (environment: string) =>
    h.call('POST', '/v1/evaluation/runs', {
      body: {
        container: 'c',
        evaluators: ['j'],
        environment,
        sample: { type: 'dataset', dataset: 'd' },
        ground_truth: { type: 'dataset', dataset: 'd' },
      },
    });
  const status = async (id: string) => (await h.call('GET', `/v1/evaluation/runs/${id}`)).body;
  const workerId = async (pid: number) =>
    (await h.services.db.selectFrom('workers').select('id').where('pid', '=', pid).executeTakeFirstOrThrow())
      .id;
  const owners = async (runId: string) =>
    new Set(
      (
        await h.services.db.selectFrom('run_chunks').select('owner').where('run_id', '=', runId).execute()
      ).map((r) => r.owner),
    );

  it("executes a run only on its environment's workers", async () => {
    const run = await launch('a');
    expect(run.status).toBe(201);
    await waitFor(async () => (await status(run.body.id)).status === 'completed', 30_000);
    expect([...(await owners(run.body.id))]).toEqual([await workerId(workers[0]!.pid)]);

    // The worker's own metrics: protected by a key with metrics:read, and counting what it scored.
    const url = /metrics on (http:\/\/\S+\/metrics)/.exec(workers[0]!.output())![1]!;
    expect((await fetch(url)).status).toBe(401);
    const denied = await fetch(url, {
      headers: { authorization: `Bearer ${(await h.key(['keys:read'])).key}` },
    });
    expect(denied.status).toBe(403);
    const res = await fetch(url, {
      headers: { authorization: `Bearer ${(await h.key(['metrics:read'])).key}` },
    });
    expect(res.status).toBe(200);
    const text = await res.text();
    expect(Number(/^evalgate_positions_scored_total (\d+)/m.exec(text)?.[1])).toBe(20);
    expect(text).toMatch(/^evalgate_upstream_calls_total\{[^}]*outcome="ok"[^}]*\} 20$/m);
    expect(text).toMatch(/^evalgate_queue_depth\{[^}]*environment="a"/m);
  }, 60_000);

  it('keeps a run of an environment without workers queued, says so, and starts it when one appears', async () => {
    const run = await launch('b');
    expect(run.body.metrics.queue).toEqual({ environment: 'b', live_workers: 0, waiting_for_worker: true });
    // The events stream says so too, before anything else happens.
    const controller = new AbortController();
    const res = await fetch(`${h.url}/v1/evaluation/runs/${run.body.id}/events`, {
      headers: { authorization: `Bearer ${h.admin.key}` },
      signal: controller.signal,
    });
    const reader = res.body!.getReader();
    let text = '';
    while (!text.includes('event: queue')) text += new TextDecoder().decode((await reader.read()).value);
    controller.abort();
    expect(text).toMatch(
      /event: queue\ndata: \{"environment":"b","live_workers":0,"waiting_for_worker":true\}/,
    );
    await new Promise((r) => setTimeout(r, 2000));
    const waiting = await status(run.body.id);
    expect(waiting.status).toBe('queued');
    expect(waiting.metrics.queue.waiting_for_worker).toBe(true);
    expect(mock.stats.requests).toBe(20);

    workers.push(await startEvalgate(['worker', '--environment', 'b'], env, /Evalgate worker/));
    await waitFor(async () => (await status(run.body.id)).status === 'completed', 30_000);
    expect([...(await owners(run.body.id))]).toEqual([await workerId(workers[1]!.pid)]);
    expect(mock.stats.requests).toBe(40);
  }, 60_000);

  it("fails a code evaluator's positions with sandbox_unavailable on a worker that cannot sandbox", async () => {
    // The API does not execute code here, so it does not refuse the run; the worker decides.
    workers.push(
      await startEvalgate(
        ['worker', '--environment', 'nosandbox'],
        { ...env, EVALGATE_BWRAP: '/nonexistent/bwrap', EVALGATE_UNSAFE_CODE_EVALUATORS: '0' },
        /Evalgate worker/,
      ),
    );
    await h.call('POST', '/v1/evaluators', {
      body: {
        type: 'code',
        name: 'exact',
        source: 'def evaluate(sample, ground_truth, baseline):\n    return True\n',
      },
    });
    const run = await h.call('POST', '/v1/evaluation/runs', {
      body: {
        container: 'c',
        evaluators: ['exact', 'j'],
        environment: 'nosandbox',
        sample: { type: 'dataset', dataset: 'd' },
        ground_truth: { type: 'dataset', dataset: 'd' },
      },
    });
    expect(run.status, JSON.stringify(run.body)).toBe(201);
    await waitFor(async () => (await status(run.body.id)).status === 'completed', 30_000);
    const done = await status(run.body.id);
    const byName = Object.fromEntries(
      Object.values(done.results.per_model[0].per_eval).map((e: any) => [e.evaluator_name, e]),
    );
    // The judge is unaffected; the code evaluator's positions are errors with the worker's reason.
    expect(byName.j).toMatchObject({ num_scored: 20, num_errors: 0 });
    expect(byName.exact).toMatchObject({ num_scored: 0, num_errors: 20 });
    const samples = await h.call('GET', `/v1/evaluation/runs/${run.body.id}/samples?errored=true&limit=1`);
    expect(samples.body.data[0].error.code).toBe('sandbox_unavailable');
  }, 60_000);

  it('stops a running run on every worker within a second of the cancel', async () => {
    mock.reset();
    mock.set({ latencyMs: 300 });
    const big = Array.from({ length: 400 }, (_, i) => ({ input: `q${i}`, output: `a${i}` }));
    await h.call('POST', '/v1/datasets', { body: { label: 'big', items: big } });
    const run = await h.call('POST', '/v1/evaluation/runs', {
      body: {
        container: 'c',
        evaluators: ['j'],
        environment: 'a',
        sample: { type: 'dataset', dataset: 'big', range: '0:400' },
        ground_truth: { type: 'dataset', dataset: 'big', range: '0:400' },
      },
    });
    await waitFor(() => mock.stats.requests >= 20, 20_000);
    const cancelled = await h.call('POST', `/v1/evaluation/runs/${run.body.id}/cancel`);
    expect(cancelled.status).toBe(200);
    const at = mock.stats.requests;
    await waitFor(async () => (await status(run.body.id)).status === 'cancelled', 10_000);
    // Calls in flight at the cancel were aborted; at most a second's worth started after it.
    await new Promise((r) => setTimeout(r, 1000));
    expect(mock.stats.requests - at).toBeLessThan(40);
    const done = await status(run.body.id);
    expect(
      done.results.per_model[0].per_eval[Object.keys(done.results.per_model[0].per_eval)[0]!].break_reason,
    ).toBe('cancelled');
    mock.set({ latencyMs: 0 });
  }, 60_000);
});
