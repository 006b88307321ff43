/**
 * `EVALGATE_MODEL_CONCURRENCY` across processes: three `evalgate worker` processes (inline executor, one
 * PostgreSQL database, one Redis) judge one run; the upstream never sees more calls to the judge model at
 * once than the limit, although each process alone could start that many. The processes start one after
 * another while the run is under way, so the test also covers workers joining a busy model.
 */
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type MockUpstream, startMockUpstream } from '../fixtures/mock-upstream.js';
import { type FreshDatabase, freshDatabase, testDbKind } from '../helpers/databases.js';
import { type Harness, startHarness } from '../helpers/harness.js';
import { type EvalgateProcess, startEvalgate } from '../helpers/processes.js';
import { waitFor } from '../helpers/wait.js';

const LIMIT = 4;
const ITEMS = 120;

describe.skipIf(testDbKind() === 'sqlite')(
  'the model concurrency limit across worker processes (Redis)',
  () => {
    let mock: MockUpstream;
    let db: FreshDatabase;
    let h: Harness;
    let env: Record<string, string>;
    const workers: EvalgateProcess[] = [];

    beforeAll(async () => {
      mock = await startMockUpstream({
        reply: () => ({ json: { score: 1, reasoning: 'ok' } }),
        latencyMs: 60,
      });
      db = await freshDatabase();
      env = {
        EVALGATE_DATABASE_URL: db.url,
        EVALGATE_DATA_DIR: db.dataDir,
        EVALGATE_KEY_PEPPER: 'model-concurrency-pepper-0123456789',
        EVALGATE_REDIS_URL: process.env.EVALGATE_TEST_REDIS_URL ?? 'redis://127.0.0.1:6379',
        EVALGATE_REDIS_PREFIX: `egmc${randomBytes(4).toString('hex')}`,
        EVALGATE_MODEL_CONCURRENCY: String(LIMIT),
        // Chunks small and many per process, so that each process alone would fill the limit.
        EVALGATE_RUN_CHUNK_SIZE: '4',
        EVALGATE_WORKER_CONCURRENCY: '4',
        EVALGATE_RUN_POLL_MS: '50',
      };
      h = await startHarness({ database: db, env: { ...env, EVALGATE_SERVE_EXECUTES: '0' } });
      const model = await h.call('POST', '/v1/models', {
        body: { label: 'judge', base_url: mock.baseUrl, upstream_model: 'j' },
      });
      expect(model.status).toBe(201);
      expect((await h.call('POST', '/v1/containers', { body: { label: 'c' } })).status).toBe(201);
      const items = Array.from({ length: ITEMS }, (_, i) => ({ input: `q${i}`, output: `a${i}` }));
      expect((await h.call('POST', '/v1/datasets', { body: { label: 'd', items } })).status).toBe(201);
      const judge = await h.call('POST', '/v1/evaluators', {
        body: { type: 'judge', name: 'j', model: 'judge', prompt: 'Rate {{output}}' },
      });
      expect(judge.status).toBe(201);
    }, 60_000);

    afterAll(async () => {
      await Promise.all(workers.map((w) => w.kill()));
      await h?.close();
      await mock?.close();
      await db?.drop();
    });

    it('never has more judge calls in flight at the upstream than the limit', async () => {
      workers.push(await startEvalgate(['worker'], env, /Evalgate worker/, 120_000));
      const created = await h.call('POST', '/v1/evaluation/runs', {
        body: {
          container: 'c',
          evaluators: ['j'],
          sample: { type: 'dataset', dataset: 'd', range: `0:${ITEMS}` },
        },
      });
      expect(created.status).toBe(201);
      const id = created.body.id as string;
      // The first worker is busy (the limit reached) before the others join.
      await waitFor(() => mock.stats.inFlight >= LIMIT, 30_000, 'the first worker at the limit');
      workers.push(
        ...(await Promise.all([1, 2].map(() => startEvalgate(['worker'], env, /Evalgate worker/, 120_000)))),
      );
      await waitFor(
        async () => (await h.call('GET', `/v1/evaluation/runs/${id}`)).body.status === 'completed',
        120_000,
        'the run to complete',
      );
      const run = (await h.call('GET', `/v1/evaluation/runs/${id}`)).body;
      expect(run.metrics.judge.calls).toBe(ITEMS);
      expect(mock.stats.completed).toBe(ITEMS);
      expect(mock.stats.mostInFlight).toBe(LIMIT);
    }, 180_000);
  },
);
