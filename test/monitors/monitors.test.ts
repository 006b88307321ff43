import { createHash, randomBytes } from 'node:crypto';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type MockUpstream, startMockUpstream } from '../fixtures/mock-upstream.js';
import { type FreshDatabase, freshDatabase, testDbKind } from '../helpers/databases.js';
import { type Harness, startHarness } from '../helpers/harness.js';
import { type EvalgateProcess, startEvalgate } from '../helpers/processes.js';
import { waitFor } from '../helpers/wait.js';

/**
 * Monitors over real gateway traffic: on SQLite the API process scores inline; on PostgreSQL the API
 * only enqueues on BullMQ (Redis) and an `evalgate worker` child process scores. The judge is a mock
 * provider on loopback that scores an answer from its number: odd ones pass (1), even ones fail (0.2).
 */

const PEPPER = 'monitor-test-pepper-0123456789ab';

/** The selection rule, written out independently: SHA-256 of "monitor:log", first 32 bits, under the rate. */
const chosen = (monitorId: string, logId: string, rate: number) =>
  createHash('sha256').update(`${monitorId}:${logId}`).digest().readUInt32BE(0) / 2 ** 32 < rate;

describe(`monitors (${testDbKind() === 'postgres' ? 'postgres + BullMQ worker' : 'sqlite inline'})`, () => {
  let db: FreshDatabase;
  let h: Harness;
  let mock: MockUpstream;
  let client: OpenAI;
  const workers: EvalgateProcess[] = [];
  const logIds: string[] = [];
  let counter = 0;

  beforeAll(async () => {
    mock = await startMockUpstream({
      record: false,
      reply: (req) => {
        if (req.body.model === 'j') {
          const n = Number(/ans (\d+)/.exec(req.lastUserText)?.[1] ?? 0);
          return { json: { score: n % 2 === 1 ? 1 : 0.2, reasoning: `answer ${n}` } };
        }
        return `ans ${req.lastUserText.replace(/\D/g, '')}`;
      },
    });
    db = await freshDatabase();
    const env: Record<string, string> = {
      EVALGATE_DATABASE_URL: db.url,
      EVALGATE_DATA_DIR: db.dataDir,
      EVALGATE_KEY_PEPPER: PEPPER,
      EVALGATE_RUN_POLL_MS: '100',
      EVALGATE_LOG_FLUSH_MS: '50',
    };
    if (testDbKind() === 'postgres') {
      Object.assign(env, {
        EVALGATE_EXECUTOR: 'bullmq',
        EVALGATE_REDIS_URL: 'redis://127.0.0.1:6379',
        EVALGATE_REDIS_PREFIX: `egmon${randomBytes(4).toString('hex')}`,
        EVALGATE_RUN_LEASE_MS: '3000',
      });
    }
    h = await startHarness({ database: db, env });
    if (testDbKind() === 'postgres') {
      workers.push(await startEvalgate(['worker', '--environment', 'main'], env, /Evalgate worker/));
    }
    for (const [label, upstream] of [
      ['gen', 'g'],
      ['judge', 'j'],
    ]) {
      const r = await h.call('POST', '/v1/models', {
        body: { label, provider: 'openai-compatible', base_url: mock.baseUrl, upstream_model: upstream },
      });
      expect(r.status).toBe(201);
    }
    expect((await h.call('POST', '/v1/containers', { body: { label: 'c' } })).status).toBe(201);
    const ev = await h.call('POST', '/v1/evaluators', {
      body: { type: 'judge', name: 'j', model: 'judge', prompt: 'Rate {{output}}', pass_threshold: 0.5 },
    });
    expect(ev.status).toBe(201);
    client = new OpenAI({
      apiKey: h.admin.key,
      baseURL: `${h.url}/v1`,
      defaultHeaders: { 'X-Evalgate-Container': 'c' },
      maxRetries: 0,
    });
  }, 90_000);

  afterAll(async () => {
    await Promise.all(workers.map((w) => w.kill()));
    await h?.close();
    await mock?.close();
    await db?.drop();
  });

  /** `n` calls through the gateway, 10 at a time; returns their task log ids. */
  async function traffic(n: number): Promise<string[]> {
    const ids: string[] = [];
    const one = async () => {
      const i = counter++;
      const { response } = await client.chat.completions
        .create({ model: 'gen', messages: [{ role: 'user', content: `question ${i}` }] })
        .withResponse();
      const id = response.headers.get('x-evalgate-log-id');
      expect(id).toMatch(/^log_/);
      ids.push(id ?? '');
    };
    for (let i = 0; i < n; i += 10) await Promise.all(Array.from({ length: Math.min(10, n - i) }, one));
    logIds.push(...ids);
    // Recorded (the log writer has committed them) before anything is checked.
    await waitFor(
      async () => (await h.call('GET', '/v1/containers/c/logs?limit=1')).body.total >= logIds.length,
      20_000,
      'logs recorded',
    );
    return ids;
  }

  const monitor = async (ref: string) => (await h.call('GET', `/v1/monitors/${ref}`)).body;

  /** Every selected call scored: lag 0 and one row per selected call. */
  /**
   * Waits until the monitor has scored what it selected; with `selected`, also until it has selected that
   * many (selection follows the log writer's commit, so an early look may see none selected yet).
   */
  async function settled(ref: string, selected?: number): Promise<void> {
    await waitFor(
      async () => {
        const m = await monitor(ref);
        if (selected !== undefined && m.selected !== selected) return false;
        const r = await h.call('GET', `/v1/monitors/${ref}/results`);
        const t = r.body.totals[0];
        return m.lag_seconds === 0 && (m.selected === 0 || (t && t.num_scored + t.num_errors === m.selected));
      },
      60_000,
      `monitor ${ref} settled`,
    );
  }

  async function sampleIds(ref: string): Promise<string[]> {
    const out: string[] = [];
    for (let offset = 0; ; offset += 100) {
      const page = await h.call('GET', `/v1/monitors/${ref}/samples?limit=100&offset=${offset}`);
      expect(page.status).toBe(200);
      out.push(...page.body.data.map((s: { task_log_id: string }) => s.task_log_id));
      if (out.length >= page.body.total) return out.sort();
    }
  }

  it('reports every problem of a monitor at once, in the 422 shape', async () => {
    const r = await h.call('POST', '/v1/monitors', {
      body: { name: 'bad', container: 'c', evaluators: ['j'], sampling_rate: 0 },
    });
    expect(r.status).toBe(422);
    expect(r.body.detail[0].loc).toEqual(['body', 'sampling_rate']);
    await h.call('POST', '/v1/evaluators', {
      body: { type: 'judge', name: 'needs-expected', model: 'judge', prompt: 'Is {{output}} {{expected}}?' },
    });
    const many = await h.call('POST', '/v1/monitors', {
      body: {
        name: 'bad',
        container: 'c',
        evaluators: ['needs-expected'],
        environment: 'nowhere',
        alert: {
          evaluator: 'j',
          metric: 'pass_rate',
          below: 0.5,
          window: 600,
          webhook_url: 'http://169.254.169.254/latest',
        },
      },
    });
    expect(many.status).toBe(422);
    const locs = many.body.detail.map((d: { loc: string[] }) => d.loc.join('.'));
    expect(locs).toEqual(
      expect.arrayContaining([
        'body.environment',
        'body.evaluators.0',
        'body.alert.evaluator',
        'body.alert.webhook_url',
      ]),
    );
    expect(
      (await h.call('POST', '/v1/monitors', { body: { name: 'x', container: 'nope', evaluators: ['j'] } }))
        .status,
    ).toBe(404);
    const reader = await h.key(['evaluation:read']);
    const denied = await h.call('POST', '/v1/monitors', {
      key: reader.key,
      body: { name: 'x', container: 'c', evaluators: ['j'] },
    });
    expect(denied.status).toBe(403);
  });

  it('scores a deterministic half of 200 calls; none for a filter on another model; buckets add up', async () => {
    const half = await h.call('POST', '/v1/monitors', {
      body: { name: 'half', container: 'c', evaluators: ['j'], sampling_rate: 0.5 },
    });
    expect(half.status).toBe(201);
    expect(half.body.alert_secret).toMatch(/^[0-9a-f]{64}$/);
    const other = await h.call('POST', '/v1/monitors', {
      body: { name: 'other-model', container: 'c', evaluators: ['j'], filter: { models: ['someone-else'] } },
    });
    expect(other.status).toBe(201);
    // Runs list leaves the monitors' long-lived runs out.
    expect((await h.call('GET', '/v1/evaluation/runs')).body.total).toBe(0);

    const ids = await traffic(200);
    const expected = ids.filter((id) => chosen(half.body.id, id, 0.5)).sort();
    await settled('half', expected.length);
    const m = await monitor('half');
    expect(m.selected).toBe(expected.length);
    expect(expected.length).toBeGreaterThanOrEqual(60);
    expect(expected.length).toBeLessThanOrEqual(140);
    const first = await sampleIds('half');
    expect(first).toEqual(expected);
    // The same calls on a second query.
    expect(await sampleIds('half')).toEqual(first);
    expect((await monitor('other-model')).selected).toBe(0);

    const results = await h.call('GET', '/v1/monitors/half/results?bucket=minute');
    expect(results.status).toBe(200);
    const [total] = results.body.totals;
    expect(total.num_scored).toBe(expected.length);
    expect(total.num_errors).toBe(0);
    expect(total.num_passed + total.num_failed).toBe(total.num_scored);
    expect(total.num_passed).toBeGreaterThan(0);
    expect(total.num_failed).toBeGreaterThan(0);
    // Scores are 1 and 0.2: the mean follows from the pass count, and the spread is the database's.
    expect(total.avg_score).toBeCloseTo((total.num_passed + 0.2 * total.num_failed) / total.num_scored, 9);
    expect(total.stdev).toBeGreaterThan(0);
    expect(total.stderr).toBeCloseTo(total.stdev / Math.sqrt(total.num_scored), 9);
    const sum = (k: string) =>
      results.body.buckets.reduce(
        (n: number, b: { evaluators: Record<string, number>[] }) => n + (b.evaluators[0]?.[k] ?? 0),
        0,
      );
    for (const k of ['num_scored', 'num_passed', 'num_failed', 'num_errors']) expect(sum(k)).toBe(total[k]);

    const failing = await h.call('GET', '/v1/monitors/half/samples?failed=true&evaluator=j&limit=100');
    expect(failing.body.total).toBe(total.num_failed);
    for (const s of failing.body.data) {
      expect(s.passed).toBe(false);
      expect(ids).toContain(s.task_log_id);
      expect(s.reasoning).toMatch(/^answer \d*[02468]$/);
      expect(s.output).toMatch(/^ans /);
      expect(JSON.stringify(s.input)).toContain('question');
    }
    const log = await h.call('GET', `/v1/containers/c/logs?limit=100`);
    expect(log.status).toBe(200);
  }, 120_000);

  it('a paused monitor scores nothing new; resumed, it does not go back', async () => {
    // A witness selecting every call shows when selection from the paused period's batches is over.
    const witness = await h.call('POST', '/v1/monitors', {
      body: { name: 'witness', container: 'c', evaluators: ['j'], sampling_rate: 1 },
    });
    expect(witness.status).toBe(201);
    const before = (await monitor('half')).selected;
    expect((await h.call('PATCH', '/v1/monitors/half', { body: { enabled: false } })).body.enabled).toBe(
      false,
    );
    const paused = await traffic(40);
    await waitFor(async () => (await monitor('witness')).selected === 40, 20_000, 'witness selection');
    const after = await monitor('half');
    expect(after.selected).toBe(before);
    expect((await h.call('PATCH', '/v1/monitors/half', { body: { enabled: true } })).status).toBe(200);
    const resumed = await traffic(40);
    const fresh = resumed.filter((id) => chosen(after.id, id, 0.5));
    await settled('half', before + fresh.length);
    const scored = new Set(await sampleIds('half'));
    expect(paused.some((id) => scored.has(id))).toBe(false);
    expect(fresh.every((id) => scored.has(id))).toBe(true);
    expect((await monitor('half')).selected).toBe(before + fresh.length);
  }, 120_000);

  it("answers 404 to another project's key, and to unknown monitors", async () => {
    const stranger = await h.key(['*'], 'elsewhere');
    for (const [method, path] of [
      ['GET', '/v1/monitors/half'],
      ['GET', '/v1/monitors/half/results'],
      ['GET', '/v1/monitors/half/samples'],
      ['PATCH', '/v1/monitors/half'],
      ['DELETE', '/v1/monitors/half'],
    ] as const) {
      const r = await h.call(method, path, { key: stranger.key, body: method === 'PATCH' ? {} : undefined });
      expect(r.status, `${method} ${path}`).toBe(404);
      expect(r.body.error.code).toBe('not_found');
    }
    expect((await h.call('GET', '/v1/monitors', { key: stranger.key })).body.total).toBe(0);
    // Permissions as for runs; the samples show the calls, which needs logs:read too.
    const reader = await h.key(['evaluation:read']);
    expect((await h.call('GET', '/v1/monitors/half', { key: reader.key })).status).toBe(200);
    expect((await h.call('GET', '/v1/monitors/half/results', { key: reader.key })).status).toBe(200);
    expect((await h.call('GET', '/v1/monitors/half/samples', { key: reader.key })).status).toBe(403);
    const patch = await h.call('PATCH', '/v1/monitors/half', { key: reader.key, body: { enabled: false } });
    expect(patch.status).toBe(403);
    const logReader = await h.key(['evaluation:read', 'logs:read']);
    expect((await h.call('GET', '/v1/monitors/half/samples', { key: logReader.key })).status).toBe(200);
    expect((await h.call('GET', '/v1/monitors/mon_nothing')).status).toBe(404);
    expect((await h.call('GET', '/v1/monitors/half/results?bucket=week')).status).toBe(422);
    expect((await h.call('GET', '/v1/monitors/half/samples?evaluator=nope')).status).toBe(422);
    expect((await h.call('PATCH', '/v1/monitors/half', { body: { evaluators: ['j'] } })).status).toBe(422);
  });

  it('selects by gateway route (metadata.route), and refuses an unknown route', async () => {
    const bad = await h.call('POST', '/v1/monitors', {
      body: { name: 'bad-route', container: 'c', evaluators: ['j'], filter: { routes: ['chat', 'fax'] } },
    });
    expect(bad.status).toBe(422);
    expect(bad.body.detail[0].loc.slice(0, 3)).toEqual(['body', 'filter', 'routes']);
    const patchBad = await h.call('PATCH', '/v1/monitors/half', { body: { filter: { routes: [] } } });
    expect(patchBad.status).toBe(422);
    // A container of its own: the other tests count the calls of 'c'.
    expect((await h.call('POST', '/v1/containers', { body: { label: 'r' } })).status).toBe(201);
    const chat = await h.call('POST', '/v1/monitors', {
      body: { name: 'chat-only', container: 'r', evaluators: ['j'], filter: { routes: ['chat'] } },
    });
    expect(chat.status).toBe(201);
    expect(chat.body.filter).toEqual({ routes: ['chat'] });
    const emb = await h.call('POST', '/v1/monitors', {
      body: {
        name: 'embeddings-only',
        container: 'r',
        evaluators: ['j'],
        filter: { routes: ['embeddings', 'messages'] },
      },
    });
    expect(emb.status).toBe(201);
    const r = new OpenAI({
      apiKey: h.admin.key,
      baseURL: `${h.url}/v1`,
      defaultHeaders: { 'X-Evalgate-Container': 'r' },
      maxRetries: 0,
    });
    const chatIds: string[] = [];
    const embIds: string[] = [];
    for (let i = 0; i < 8; i++) {
      const c = await r.chat.completions
        .create({ model: 'gen', messages: [{ role: 'user', content: `question ${i}` }] })
        .withResponse();
      chatIds.push(c.response.headers.get('x-evalgate-log-id') ?? '');
      const e = await r.embeddings.create({ model: 'gen', input: `embed ${i}` }).withResponse();
      embIds.push(e.response.headers.get('x-evalgate-log-id') ?? '');
    }
    const selectedLogs = async (monitorId: string) =>
      (
        await h.services.db
          .selectFrom('monitor_selections')
          .select('log_id')
          .where('monitor_id', '=', monitorId)
          .execute()
      )
        .map((row) => row.log_id)
        .sort();
    await waitFor(async () => (await monitor('chat-only')).selected === 8, 20_000, 'chat calls selected');
    await waitFor(
      async () => (await monitor('embeddings-only')).selected === 8,
      20_000,
      'embeddings selected',
    );
    expect(await selectedLogs(chat.body.id)).toEqual([...chatIds].sort());
    expect(await selectedLogs(emb.body.id)).toEqual([...embIds].sort());
  }, 120_000);

  it('backfills a past window, and deleting a monitor ends its run', async () => {
    const back = await h.call('POST', '/v1/monitors', {
      body: {
        name: 'back',
        container: 'c',
        evaluators: ['j'],
        sampling_rate: 0.25,
        backfill: { since: '2000-01-01T00:00:00Z' },
      },
    });
    expect(back.status).toBe(201);
    const expected = logIds.filter((id) => chosen(back.body.id, id, 0.25)).sort();
    expect(back.body.selected).toBe(expected.length);
    await settled('back');
    expect(await sampleIds('back')).toEqual(expected);
    const runId = back.body.run_id;
    expect((await h.call('DELETE', '/v1/monitors/back')).body).toEqual({
      object: 'monitor',
      id: back.body.id,
      deleted: true,
    });
    expect((await h.call('GET', '/v1/monitors/back')).status).toBe(404);
    // The monitor's run is not an evaluation run of the API; it ended with its monitor.
    expect((await h.call('GET', `/v1/evaluation/runs/${runId}`)).status).toBe(404);
    const run = await h.services.db
      .selectFrom('runs')
      .select('status')
      .where('id', '=', runId)
      .executeTakeFirst();
    expect(run?.status).toBe('cancelled');
  }, 120_000);
});
