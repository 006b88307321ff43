import { randomBytes } from 'node:crypto';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type MockUpstream, startMockUpstream } from '../fixtures/mock-upstream.js';
import { type FreshDatabase, freshDatabase, testDbKind } from '../helpers/databases.js';
import { type Harness, startHarness } from '../helpers/harness.js';
import { type EvalgateProcess, startEvalgate } from '../helpers/processes.js';
import { waitFor } from '../helpers/wait.js';

/**
 * A process scoring a monitor's batch is SIGKILLed while its judge calls are held: another process
 * takes the batch over (a BullMQ job whose lock expires, or an inline chunk whose lease expires) and
 * every selected call ends up scored exactly once.
 */

const CALLS = 120;

for (const mode of ['bullmq', 'inline'] as const) {
  describe.skipIf(testDbKind() !== 'postgres')(`a monitor's scorer killed mid-batch (${mode})`, () => {
    let db: FreshDatabase;
    let h: Harness;
    let mock: MockUpstream;
    const others: EvalgateProcess[] = [];
    let open = true;
    let release: () => void = () => {};
    let opened = Promise.resolve();

    beforeAll(async () => {
      mock = await startMockUpstream({
        record: false,
        reply: async (req) => {
          if (req.body.model !== 'j') return 'an answer';
          if (!open) await opened;
          return { json: { score: 1, reasoning: 'ok' } };
        },
      });
      db = await freshDatabase('postgres');
      const env: Record<string, string> = {
        EVALGATE_DATABASE_URL: db.url,
        EVALGATE_DATA_DIR: db.dataDir,
        EVALGATE_KEY_PEPPER: 'monitor-crash-pepper-0123456789ab',
        EVALGATE_EXECUTOR: mode,
        EVALGATE_REDIS_URL: 'redis://127.0.0.1:6379',
        EVALGATE_REDIS_PREFIX: `egmonk${randomBytes(4).toString('hex')}`,
        EVALGATE_RUN_LEASE_MS: '3000',
        EVALGATE_RUN_POLL_MS: '100',
        EVALGATE_LOG_FLUSH_MS: '50',
        EVALGATE_WORKER_CONCURRENCY: '4',
        EVALGATE_RUN_CHUNK_SIZE: '10',
      };
      // The API process records and selects; two worker processes score (inline: through leases).
      h = await startHarness({ database: db, env: { ...env, EVALGATE_SERVE_EXECUTES: '0' } });
      for (let i = 0; i < 2; i++) {
        others.push(await startEvalgate(['worker', '--environment', 'main'], env, /Evalgate worker/));
      }
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
    }, 90_000);

    afterAll(async () => {
      open = true;
      release();
      await Promise.all(others.map((p) => p.kill()));
      await h?.close();
      await mock?.close();
      await db?.drop();
    });

    it('scores every selected call exactly once', async () => {
      const m = await h.call('POST', '/v1/monitors', {
        body: { name: 'all', container: 'c', evaluators: ['j'], sampling_rate: 1 },
      });
      expect(m.status).toBe(201);
      const runId: string = m.body.run_id;
      // Judges wait from now on: the batches are taken and held mid-scoring.
      open = false;
      opened = new Promise<void>((r) => {
        release = r;
      });
      const client = new OpenAI({
        apiKey: h.admin.key,
        baseURL: `${h.url}/v1`,
        defaultHeaders: { 'X-Evalgate-Container': 'c' },
        maxRetries: 0,
      });
      for (let i = 0; i < CALLS; i += 10) {
        await Promise.all(
          Array.from({ length: 10 }, () =>
            client.chat.completions.create({ model: 'gen', messages: [{ role: 'user', content: 'hi' }] }),
          ),
        );
      }
      const victim = others.at(-1)!;
      const victimId = async () =>
        (
          await h.services.db
            .selectFrom('workers')
            .select('id')
            .where('pid', '=', victim.pid)
            .executeTakeFirst()
        )?.id;
      const held = async () => {
        const id = await victimId();
        if (!id) return false;
        const rows = await h.services.db
          .selectFrom('run_chunks')
          .select('owner')
          .where('run_id', '=', runId)
          .where('status', '=', 'pending')
          .where('owner', '=', id)
          .execute();
        return rows.length > 0;
      };
      await waitFor(held, 30_000, 'the victim holding a batch');
      expect((await h.call('GET', '/v1/monitors/all')).body.selected).toBe(CALLS);
      await victim.kill();
      open = true;
      release();
      await waitFor(
        async () => {
          const r = await h.call('GET', '/v1/monitors/all/results');
          return r.body.totals[0]?.num_scored === CALLS;
        },
        60_000,
        'every call scored',
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
      const monitor = (await h.call('GET', '/v1/monitors/all')).body;
      expect(monitor.lag_seconds).toBe(0);
      // The monitor's run goes on after the crash: it is not finalized by its chunks running out.
      const run = await h.services.db
        .selectFrom('runs')
        .select('status')
        .where('id', '=', runId)
        .executeTakeFirst();
      expect(run?.status).toBe('running');
    }, 120_000);
  });
}
