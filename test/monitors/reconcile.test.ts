import { randomBytes } from 'node:crypto';
import { Queue } from 'bullmq';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { chunkJobId, queueName } from '../../src/executor/bullmq-shared.js';
import { createWorker, type Worker } from '../../src/executor/worker.js';
import { type MockUpstream, startMockUpstream } from '../fixtures/mock-upstream.js';
import { type FreshDatabase, freshDatabase, testDbKind } from '../helpers/databases.js';
import { type Harness, startHarness } from '../helpers/harness.js';
import { waitFor } from '../helpers/wait.js';

/**
 * A monitor's chunk jobs lost from Redis (eviction, a restart without persistence) strand nothing: the
 * chunks stay pending in the database, and the BullMQ executors' reconciler queues them again; every
 * selected call is then scored exactly once. PostgreSQL + Redis, the executor in this process.
 */
const CALLS = 30;
const REDIS_URL = 'redis://127.0.0.1:6379';

describe.skipIf(testDbKind() !== 'postgres')("the reconciler re-queues a monitor's lost chunk jobs", () => {
  let db: FreshDatabase;
  let h: Harness;
  let mock: MockUpstream;
  let worker: Worker | null = null;
  let queue: Queue;
  const prefix = `egmonrec${randomBytes(4).toString('hex')}`;

  beforeAll(async () => {
    mock = await startMockUpstream({
      record: false,
      reply: (req) => (req.body.model === 'j' ? { json: { score: 1, reasoning: 'ok' } } : 'an answer'),
    });
    db = await freshDatabase('postgres');
    // No executor yet: the API process selects and queues; the jobs wait in Redis.
    h = await startHarness({
      database: db,
      env: {
        EVALGATE_EXECUTOR: 'bullmq',
        EVALGATE_REDIS_URL: REDIS_URL,
        EVALGATE_REDIS_PREFIX: prefix,
        EVALGATE_RUN_CHUNK_SIZE: '10',
        EVALGATE_RUN_RECONCILE_MS: '300',
        EVALGATE_LOG_FLUSH_MS: '50',
      },
    });
    queue = new Queue(queueName('main'), { connection: { url: REDIS_URL }, prefix });
    for (const [label, upstream] of [
      ['gen', 'g'],
      ['judge', 'j'],
    ]) {
      await h.call('POST', '/v1/models', {
        body: { label, provider: 'openai-compatible', base_url: mock.baseUrl, upstream_model: upstream },
      });
    }
    await h.call('POST', '/v1/containers', { body: { label: 'c' } });
    await h.call('POST', '/v1/evaluators', {
      body: { type: 'judge', name: 'j', model: 'judge', prompt: 'Rate {{output}}' },
    });
  }, 60_000);

  afterAll(async () => {
    await worker?.close();
    await queue?.obliterate({ force: true }).catch(() => {});
    await queue?.close();
    await h?.close();
    await mock?.close();
    await db?.drop();
  });

  it('queues the pending chunks again and scores each selected call once', async () => {
    const m = await h.call('POST', '/v1/monitors', {
      body: { name: 'all', container: 'c', evaluators: ['j'], sampling_rate: 1 },
    });
    expect(m.status).toBe(201);
    const runId: string = m.body.run_id;
    const client = new OpenAI({
      apiKey: h.admin.key,
      baseURL: `${h.url}/v1`,
      defaultHeaders: { 'X-Evalgate-Container': 'c' },
      maxRetries: 0,
    });
    for (let i = 0; i < CALLS; i++) {
      await client.chat.completions.create({ model: 'gen', messages: [{ role: 'user', content: `q${i}` }] });
    }
    await waitFor(
      async () => (await h.call('GET', '/v1/monitors/all')).body.selected === CALLS,
      20_000,
      'every call selected',
    );
    const chunks = await h.services.db
      .selectFrom('run_chunks')
      .select(['launch_index', 'chunk_index', 'status'])
      .where('run_id', '=', runId)
      .execute();
    expect(chunks.length).toBeGreaterThanOrEqual(CALLS / 10);
    expect(chunks.every((c) => c.status === 'pending')).toBe(true);

    // Redis loses the chunk jobs (each was queued: the selection submitted it).
    const ids = chunks.map((c) => chunkJobId(runId, c.launch_index, c.chunk_index));
    for (const id of ids) {
      const job = await queue.getJob(id);
      expect(job, id).toBeTruthy();
      await job?.remove();
      expect(await queue.getJob(id)).toBeFalsy();
    }

    // An executor starts: nothing queued for it but what its reconciler finds missing.
    worker = await createWorker(h.services);
    await worker.start();
    await waitFor(
      async () => {
        const r = await h.call('GET', '/v1/monitors/all/results');
        return r.body.totals[0]?.num_scored === CALLS;
      },
      60_000,
      'every selected call scored',
    );
    const rows = await h.services.db
      .selectFrom('run_samples')
      .select((eb) => [
        eb.fn.countAll<string>().as('n'),
        eb.fn.count<string>('position').distinct().as('positions'),
        eb.fn.count<string>('item_id').distinct().as('logs'),
      ])
      .where('run_id', '=', runId)
      .executeTakeFirstOrThrow();
    expect(Number(rows.n)).toBe(CALLS);
    expect(Number(rows.positions)).toBe(CALLS);
    expect(Number(rows.logs)).toBe(CALLS);
    await waitFor(
      async () => {
        const left = await h.services.db
          .selectFrom('run_chunks')
          .select('status')
          .where('run_id', '=', runId)
          .where('status', '=', 'pending')
          .execute();
        return left.length === 0;
      },
      20_000,
      'every chunk done',
    );
    expect((await h.call('GET', '/v1/monitors/all')).body.lag_seconds).toBe(0);
  }, 120_000);
});
