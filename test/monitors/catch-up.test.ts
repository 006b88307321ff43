import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLogWriter } from '../../src/capture/writer.js';
import { openDatabase } from '../../src/db/database.js';
import { MonitorSelector } from '../../src/monitors/selector.js';
import { newId } from '../../src/shared/ids.js';
import { type MockUpstream, startMockUpstream } from '../fixtures/mock-upstream.js';
import { type FreshDatabase, freshDatabase, testDbKind } from '../helpers/databases.js';
import { type Harness, startHarness } from '../helpers/harness.js';
import { waitFor } from '../helpers/wait.js';

/**
 * Calls committed by the log writer but never selected (their process died between the commit and the
 * selection) are simulated by a log writer with no listener writing into the container. They are
 * selected exactly once: by the next batch's selection, by a restarted process's catch-up, and by two
 * catch-ups racing each other.
 */
describe(`monitor selection after a lost batch (${testDbKind()})`, () => {
  let db: FreshDatabase;
  let h: Harness;
  let mock: MockUpstream;
  let client: OpenAI;
  let containerId = '';
  let monitorId = '';
  let runId = '';
  const allIds: string[] = [];

  const env = {
    EVALGATE_RUN_POLL_MS: '100',
    EVALGATE_LOG_FLUSH_MS: '50',
    // No periodic catch-up: only what each step does selects the gap.
    EVALGATE_RUN_RECONCILE_MS: '3600000',
  };

  beforeAll(async () => {
    mock = await startMockUpstream({
      record: false,
      reply: (req) => (req.body.model === 'j' ? { json: { score: 1, reasoning: 'fine' } } : 'an answer'),
    });
    db = await freshDatabase();
    h = await startHarness({ database: db, env });
    for (const [label, upstream] of [
      ['gen', 'g'],
      ['judge', 'j'],
    ]) {
      await h.call('POST', '/v1/models', {
        body: { label, provider: 'openai-compatible', base_url: mock.baseUrl, upstream_model: upstream },
      });
    }
    containerId = (await h.call('POST', '/v1/containers', { body: { label: 'c' } })).body.id;
    await h.call('POST', '/v1/evaluators', {
      body: { type: 'judge', name: 'j', model: 'judge', prompt: 'Rate {{output}}', pass_threshold: 0.5 },
    });
    const m = await h.call('POST', '/v1/monitors', {
      body: { name: 'all', container: 'c', evaluators: ['j'], sampling_rate: 1 },
    });
    expect(m.status).toBe(201);
    monitorId = m.body.id;
    runId = m.body.run_id;
    client = clientOf(h);
  }, 90_000);

  const clientOf = (x: Harness) =>
    new OpenAI({
      apiKey: x.admin.key,
      baseURL: `${x.url}/v1`,
      defaultHeaders: { 'X-Evalgate-Container': 'c' },
      maxRetries: 0,
    });

  afterAll(async () => {
    await h?.close();
    await mock?.close();
    await db?.drop();
  });

  async function traffic(n: number): Promise<void> {
    for (let i = 0; i < n; i++) {
      const { response } = await client.chat.completions
        .create({ model: 'gen', messages: [{ role: 'user', content: `question ${i}` }] })
        .withResponse();
      allIds.push(response.headers.get('x-evalgate-log-id') ?? '');
    }
  }

  /** `n` task logs committed into the container with nobody told: the batch a dead process never selected. */
  async function lostBatch(n: number): Promise<void> {
    const writer = createLogWriter(h.services.db, { batchSize: n });
    for (let i = 0; i < n; i++) {
      const id = newId('log');
      allIds.push(id);
      writer.write({
        id,
        projectId: h.admin.projectId,
        containerId,
        model: 'gen',
        input: [{ role: 'user', content: `lost ${i}` }],
        output: `lost answer ${i}`,
        usage: null,
        latencyMs: 1,
        cost: 0,
        status: 'success',
        error: null,
        metadata: { route: 'chat' },
        createdAt: new Date().toISOString(),
      });
    }
    await writer.close();
    expect(writer.stats()).toMatchObject({ written: n, failed: 0 });
  }

  const selected = async () => (await h.call('GET', '/v1/monitors/all')).body.selected as number;
  const selectedIds = async () =>
    (
      await h.services.db
        .selectFrom('monitor_selections')
        .select('log_id')
        .where('monitor_id', '=', monitorId)
        .execute()
    ).map((r) => r.log_id);

  it('selects a lost batch once, from the next batch, a restart, and racing catch-ups', async () => {
    await traffic(10);
    await waitFor(async () => (await selected()) === 10, 20_000, 'the first calls selected');

    // Committed, never selected: nothing takes them while nothing else happens.
    await lostBatch(30);
    await new Promise((r) => setTimeout(r, 500));
    expect(await selected()).toBe(10);

    // The next batch's selection reads the gap before its own calls.
    await traffic(5);
    await waitFor(async () => (await selected()) === 45, 20_000, 'the gap selected with the next batch');

    // The process dies after committing a batch; the restarted one catches up at start.
    await lostBatch(20);
    expect(await selected()).toBe(45);
    await h.close();
    h = await startHarness({ database: db, env });
    client = clientOf(h);
    await waitFor(async () => (await selected()) === 65, 20_000, 'the gap selected at start');

    // Two catch-ups at once: each call still selected once. On PostgreSQL through two connection pools
    // (as two processes); SQLite's one writer is a connection of this thread (a second one would wait on
    // it synchronously), so there the two passes interleave their transactions on one.
    await lostBatch(40);
    const second = testDbKind() === 'postgres' ? await openDatabase(db.url) : null;
    try {
      const passes = [h.services.db, second?.db ?? h.services.db].map(
        (handle) =>
          new MonitorSelector({
            db: handle,
            queue: h.services.queue,
            chunkSize: 16,
            catchUpMs: 0,
            warn: () => {},
          }),
      );
      const counts = await Promise.all(passes.map((p) => p.catchUp(true)));
      expect(counts[0]! + counts[1]!).toBe(40);
    } finally {
      await second?.close();
    }
    expect(await selected()).toBe(105);

    const ids = await selectedIds();
    expect(new Set(ids).size).toBe(ids.length);
    expect([...ids].sort()).toEqual([...allIds].sort());

    // And each scored once.
    await waitFor(
      async () => {
        const m = (await h.call('GET', '/v1/monitors/all')).body;
        return m.lag_seconds === 0;
      },
      60_000,
      'every selected call scored',
    );
    const rows = await h.services.db
      .selectFrom('run_samples')
      .select((eb) => [
        eb.fn.countAll<string>().as('n'),
        eb.fn.count<string>('item_id').distinct().as('logs'),
      ])
      .where('run_id', '=', runId)
      .executeTakeFirstOrThrow();
    expect(Number(rows.n)).toBe(105);
    expect(Number(rows.logs)).toBe(105);
  }, 180_000);

  it('a resumed monitor does not catch up what was committed while it was paused', async () => {
    expect((await h.call('PATCH', '/v1/monitors/all', { body: { enabled: false } })).status).toBe(200);
    await lostBatch(10);
    await traffic(3);
    const logCount = async () => (await h.call('GET', '/v1/containers/c/logs?limit=1')).body.total;
    await waitFor(async () => (await logCount()) === allIds.length, 20_000, 'the paused calls recorded');
    expect((await h.call('PATCH', '/v1/monitors/all', { body: { enabled: true } })).status).toBe(200);
    const pass = new MonitorSelector({
      db: h.services.db,
      queue: h.services.queue,
      chunkSize: 16,
      catchUpMs: 0,
      warn: () => {},
    });
    expect(await pass.catchUp(true)).toBe(0);
    await traffic(2);
    await waitFor(async () => (await selected()) === 107, 20_000, 'the calls after the resume');
    await new Promise((r) => setTimeout(r, 300));
    expect(await selected()).toBe(107);
  }, 60_000);
});
