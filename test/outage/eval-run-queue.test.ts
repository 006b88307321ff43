/**
 * An eval run created while the run queue is away (its Redis down) is answered as every run is: 503
 * `upstream_unavailable` with `Retry-After`, saying the run exists and stays queued (never a 500); a
 * retry under the same Idempotency-Key answers that run, and the run completes once Redis is back. A
 * private redis-server of this test, stopped and started again; the shared one is never touched.
 */
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createWorker, type Worker } from '../../src/executor/worker.js';
import { type Harness, startHarness } from '../helpers/harness.js';
import { finishedRun } from '../openai-evals/eval-run.js';
import { type PrivateRedis, startPrivateRedis } from './servers.js';

let redis: PrivateRedis;
let h: Harness;
/** A BullMQ worker (as `evalgate worker` runs): the API process does not execute runs in this mode. */
let worker: Worker;
let client: OpenAI;
let evalId: string;

beforeAll(async () => {
  redis = await startPrivateRedis();
  h = await startHarness({
    env: {
      EVALGATE_EXECUTOR: 'bullmq',
      EVALGATE_REDIS_URL: redis.url,
      EVALGATE_REDIS_PREFIX: 'evalq',
      EVALGATE_RUN_RECONCILE_MS: '500',
      EVALGATE_RUN_SUBMIT_TIMEOUT_MS: '2000',
    },
  });
  worker = await createWorker(h.services);
  await worker.start();
  client = new OpenAI({ apiKey: h.admin.key, baseURL: `${h.url}/v1`, maxRetries: 0 });
  const ev = await client.evals.create({
    name: 'outage',
    data_source_config: {
      type: 'custom',
      item_schema: { type: 'object', properties: { answer: { type: 'string' } }, required: ['answer'] },
      include_sample_schema: true,
    },
    testing_criteria: [
      {
        type: 'string_check',
        name: 'exact',
        input: '{{sample.output_text}}',
        reference: '{{item.answer}}',
        operation: 'eq',
      },
    ],
  });
  evalId = ev.id;
}, 60_000);

afterAll(async () => {
  await worker?.close();
  await h?.close();
  await redis?.destroy();
});

const body = {
  name: 'during the outage',
  data_source: {
    type: 'jsonl',
    source: {
      type: 'file_content',
      content: [
        { item: { answer: 'Paris' }, sample: { output_text: 'Paris' } },
        { item: { answer: 'Rome' }, sample: { output_text: 'Roma' } },
        { item: { answer: 'Oslo' }, sample: { output_text: 'Oslo' } },
      ],
    },
  },
};

async function statusOf(runId: string): Promise<string | undefined> {
  const row = await h.services.db
    .selectFrom('runs')
    .select('status')
    .where('id', '=', runId)
    .executeTakeFirst();
  return row?.status;
}

describe('creating an eval run while the run queue is down', () => {
  it('answers 503 with Retry-After, keeps the run queued, and completes it once the queue is back', async () => {
    const headers = { 'idempotency-key': 'eval-outage-1' };
    // Healthy first: the same route answers 200 and the run completes.
    const healthy = await h.call('POST', `/v1/evals/${evalId}/runs`, { body });
    expect(healthy.status).toBe(200);
    expect((await finishedRun(client, evalId, healthy.body.id)).status).toBe('completed');

    await redis.stop();
    let runId: string;
    try {
      const t0 = Date.now();
      const res = await h.call('POST', `/v1/evals/${evalId}/runs`, { body, headers });
      expect(Date.now() - t0).toBeLessThan(10_000);
      expect(res.status, JSON.stringify(res.body)).toBe(503);
      expect(res.headers.get('retry-after')).toBe('5');
      expect(res.body.error.code).toBe('upstream_unavailable');
      expect(res.body.error.details).toMatchObject({
        dependency: 'redis',
        run_created: true,
        status: 'queued',
      });
      runId = res.body.error.details.run_id;
      expect(runId).toMatch(/^run_/);
      expect(await statusOf(runId)).toBe('queued');

      // The run exists as an eval run already, and a retry under the key answers it (no second run).
      const listed = await client.evals.runs.retrieve(runId, { eval_id: evalId });
      expect(listed).toMatchObject({ id: runId, status: 'queued', name: 'during the outage' });
      const retried = await h.call('POST', `/v1/evals/${evalId}/runs`, { body, headers });
      expect(retried.status).toBe(200);
      expect(retried.body.id).toBe(runId);

      // Through the official SDK, the same answer is an APIError with status 503 and its Retry-After.
      const err = await client.evals.runs
        .create(evalId, body as OpenAI.Evals.RunCreateParams)
        .catch((e) => e);
      expect(err).toBeInstanceOf(OpenAI.APIError);
      expect((err as InstanceType<typeof OpenAI.APIError>).status).toBe(503);
      expect((err as InstanceType<typeof OpenAI.APIError>).headers?.get('retry-after')).toBe('5');
    } finally {
      await redis.start();
    }

    const run = await finishedRun(client, evalId, runId);
    expect(run.status).toBe('completed');
    expect(run.result_counts).toEqual({ total: 3, passed: 2, failed: 1, errored: 0 });
    const keyed = await h.services.db
      .selectFrom('runs')
      .select('id')
      .where('idempotency_key', '=', 'eval-outage-1')
      .execute();
    expect(keyed).toEqual([{ id: runId }]);
  }, 120_000);
});
