import { randomBytes } from 'node:crypto';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createKey } from '../../src/auth/key-store.js';
import { type DatabaseHandle, openDatabase } from '../../src/db/database.js';
import { maxCallCost } from '../../src/llm/estimate.js';
import { keyPepper } from '../../src/shared/secrets.js';
import { ensureProject } from '../../src/tenancy/projects.js';
import { type MockUpstream, startMockUpstream } from '../fixtures/mock-upstream.js';
import { type FreshDatabase, freshDatabase, testDbKind } from '../helpers/databases.js';
import { requestOnFreshConnection } from '../helpers/fresh-connection.js';
import { promptTokens } from '../helpers/o200k.js';
import { unusedPort } from '../helpers/ports.js';
import { descendants, type EvalgateProcess, startEvalgate } from '../helpers/processes.js';
import { waitFor } from '../helpers/wait.js';
import { type PrivateRedis, startPrivateRedis } from '../outage/servers.js';

/*
 * A $0.50 project budget against text of 3-token characters (`ꙮ` × 300, 3 o200k tokens a character) on
 * `serve --workers 2`: on PostgreSQL the workers share a Redis of the test's own, on SQLite the database's
 * counters. The upstream bills the o200k count of each request, so what it billed is what the calls
 * cost. For 64 concurrent gateway calls spread over both workers, a judge run, and a judge monitor, what
 * the provider billed stays within the limit and one call's largest cost; after Redis restarts empty,
 * both workers report the spend the database recorded.
 */

const LIMIT = 0.5;
/** Input dear, output cheap: the input estimate decides how many calls fit. */
const PRICED = { inputPricePerMtok: 100, outputPricePerMtok: 1, defaultParameters: {} };
const COMPLETION_TOKENS = 7;
const TEXT = 'ꙮ'.repeat(300);

describe(`a $0.50 project budget against ꙮ × 300 on serve --workers 2 (${testDbKind()}${testDbKind() === 'postgres' ? ' + Redis' : ''})`, () => {
  let db: FreshDatabase;
  let handle: DatabaseHandle;
  let redis: PrivateRedis | null = null;
  let mock: MockUpstream;
  let server: EvalgateProcess;
  let port: number;
  /** What the mock billed, in USD, by upstream model (free models bill nothing). */
  const billed = new Map<string, number>();

  /** Each request on a connection of its own, so that the kernel spreads them over both workers. */
  const call = (
    method: string,
    path: string,
    key: string,
    body?: unknown,
    headers: Record<string, string> = {},
  ) => requestOnFreshConnection(port, method, path, { key, body, headers, timeoutMs: 30_000 });

  beforeAll(async () => {
    mock = await startMockUpstream({
      latencyMs: 50,
      reply: (req) => {
        const model = String(req.body.model);
        const prompt = promptTokens(req.body);
        if (model.startsWith('priced-')) {
          const cost =
            (prompt * PRICED.inputPricePerMtok + COMPLETION_TOKENS * PRICED.outputPricePerMtok) / 1e6;
          billed.set(model, (billed.get(model) ?? 0) + cost);
        }
        const usage = { promptTokens: prompt, completionTokens: COMPLETION_TOKENS };
        return model.includes('judge')
          ? { ...usage, json: { score: 1, reasoning: 'fine' } }
          : { ...usage, text: model.startsWith('free-') ? TEXT : 'ok' };
      },
    });
    db = await freshDatabase();
    if (testDbKind() === 'postgres') redis = await startPrivateRedis();
    port = await unusedPort();
    server = await startEvalgate(
      ['serve', '--workers', '2', '--port', String(port)],
      {
        EVALGATE_DATABASE_URL: db.url,
        EVALGATE_DATA_DIR: db.dataDir,
        EVALGATE_MODEL_CONCURRENCY: '64',
        EVALGATE_RUN_CHUNK_SIZE: '16',
        EVALGATE_RUN_POLL_MS: '100',
        EVALGATE_BUDGET_CACHE_MS: '200',
        ...(redis ? { EVALGATE_REDIS_URL: redis.url, EVALGATE_REDIS_PREFIX: 'multibyte' } : {}),
      },
      /Dashboard:/,
      60_000,
    );
    expect(descendants(server.pid, 'serve')).toHaveLength(2);
    handle = await openDatabase(db.url);
  }, 90_000);

  afterAll(async () => {
    await server?.kill();
    await handle?.close();
    await redis?.destroy();
    await mock?.close();
    await db?.drop();
  });

  /** A project with a priced model `label`, a free one, and a $0.50 total budget. */
  async function project(label: string) {
    const tag = randomBytes(3).toString('hex');
    const projectId = (await ensureProject(handle.db, `multibyte-${label}-${tag}`)).id;
    const made = await createKey(handle.db, keyPepper({ keyPepper: null, dataDir: db.dataDir }), {
      projectId,
      name: 'test',
      permissions: ['*'],
    });
    const key = made.key;
    const as = (method: string, path: string, body?: unknown, headers?: Record<string, string>) =>
      call(method, path, key, body, headers);
    const upstream = `priced-${label}-${tag}`;
    for (const [name, up, prices] of [
      [label, upstream, { input_price_per_mtok: PRICED.inputPricePerMtok, output_price_per_mtok: 1 }],
      ['free', `free-${tag}`, { input_price_per_mtok: 0, output_price_per_mtok: 0 }],
    ] as const) {
      const model = await as('POST', '/v1/models', {
        label: name,
        base_url: mock.baseUrl,
        upstream_model: up,
        ...prices,
      });
      expect(model.status, JSON.stringify(model.body)).toBe(201);
    }
    const put = await as('PUT', '/v1/projects/current/budget', { limit_usd: LIMIT, period: 'total' });
    expect(put.status, JSON.stringify(put.body)).toBe(200);
    const spend = async () => (await as('GET', '/v1/projects/current/budget')).body.spend.used_usd as number;
    return { key, as, upstream, projectId, spend };
  }

  /** The project's spend as the database recorded it. */
  async function recorded(projectId: string): Promise<number> {
    const r = await sql<{ used_usd: number | string }>`
      select used_usd from budget_spend where scope = 'project' and scope_id = ${projectId}`.execute(
      handle.db,
    );
    return Number(r.rows[0]?.used_usd ?? 0);
  }

  it('64 concurrent gateway calls over both workers spend at most the limit and one call’s largest cost', async () => {
    const p = await project('gen');
    const body = { model: 'gen', messages: [{ role: 'user', content: TEXT }], max_tokens: 10 };
    const largest = maxCallCost(PRICED, body, JSON.stringify(body));
    let answered = 0;
    let refused = 0;
    for (let round = 0; round < 4; round++) {
      const replies = await Promise.all(
        Array.from({ length: 64 }, () => p.as('POST', '/v1/chat/completions', body)),
      );
      for (const r of replies) expect([200, 429], JSON.stringify(r.body)).toContain(r.status);
      answered += replies.filter((r) => r.status === 200).length;
      refused += replies.filter((r) => r.status === 429).length;
    }
    const provider = billed.get(p.upstream) ?? 0;
    await waitFor(async () => Math.abs((await p.spend()) - provider) < 1e-6, 10_000, 'the spend to settle');
    console.info(
      JSON.stringify({ gateway: { answered, refused, provider, spent: await p.spend(), largest } }),
    );
    expect(refused).toBeGreaterThan(0);
    expect(provider).toBeGreaterThanOrEqual(LIMIT - largest);
    expect(provider).toBeLessThanOrEqual(LIMIT + largest);
  }, 90_000);

  it('a judge run over such outputs spread over both workers stops with budget_exceeded within one call’s largest cost', async () => {
    const p = await project('judge');
    expect((await p.as('POST', '/v1/containers', { label: 'c' })).status).toBe(201);
    const items = Array.from({ length: 200 }, (_, i) => ({ input: `q${i}`, output: TEXT }));
    expect((await p.as('POST', '/v1/datasets', { label: 'd', items })).status).toBe(201);
    const ev = await p.as('POST', '/v1/evaluators', {
      type: 'judge',
      name: 'j',
      model: 'judge',
      prompt: 'Rate {{output}}',
    });
    expect(ev.status, JSON.stringify(ev.body)).toBe(201);
    const src = { type: 'dataset', dataset: 'd', range: '0:200' };
    const run = await p.as('POST', '/v1/evaluation/runs', {
      container: 'c',
      evaluators: [ev.body.id],
      sample: src,
      ground_truth: src,
    });
    expect(run.status, JSON.stringify(run.body)).toBe(201);
    let ended: any = null;
    await waitFor(
      async () => {
        ended = (await p.as('GET', `/v1/evaluation/runs/${run.body.id}`)).body;
        return Boolean(ended.finished_at);
      },
      90_000,
      'the run to end',
    );
    expect(ended.error).toMatchObject({ code: 'budget_exceeded' });
    const judged = mock.requests.filter((r) => String(r.body.model) === p.upstream);
    expect(judged.length).toBeGreaterThan(0);
    const largest = Math.max(...judged.map((r) => maxCallCost(PRICED, r.body)));
    const provider = billed.get(p.upstream) ?? 0;
    await waitFor(async () => Math.abs((await p.spend()) - provider) < 1e-6, 10_000, 'the spend to settle');
    console.info(
      JSON.stringify({ judges: { calls: judged.length, provider, spent: await p.spend(), largest } }),
    );
    expect(provider).toBeLessThanOrEqual(LIMIT + largest);
  }, 120_000);

  it('a judge monitor over such calls stops its judges within one call’s largest cost', async () => {
    const p = await project('judge');
    expect((await p.as('POST', '/v1/containers', { label: 'c' })).status).toBe(201);
    const ev = await p.as('POST', '/v1/evaluators', {
      type: 'judge',
      name: 'j',
      model: 'judge',
      prompt: 'Rate {{output}}',
    });
    expect(ev.status, JSON.stringify(ev.body)).toBe(201);
    const m = await p.as('POST', '/v1/monitors', {
      name: 'm',
      container: 'c',
      evaluators: ['j'],
      sampling_rate: 1,
    });
    expect(m.status, JSON.stringify(m.body)).toBe(201);
    const CALLS = 24;
    // Free calls answered with ꙮ × 300: the monitor's judges read it, and only they spend.
    const replies = await Promise.all(
      Array.from({ length: CALLS }, (_, i) =>
        p.as(
          'POST',
          '/v1/chat/completions',
          { model: 'free', messages: [{ role: 'user', content: `q${i}` }] },
          { 'X-Evalgate-Container': 'c' },
        ),
      ),
    );
    expect(replies.map((r) => r.status)).toEqual(Array(CALLS).fill(200));
    let samples: any[] = [];
    await waitFor(
      async () => {
        const r = await p.as('GET', `/v1/monitors/${m.body.id}/samples?limit=100`);
        samples = r.body.data ?? [];
        return samples.length === CALLS && samples.every((s) => s.status !== 'pending');
      },
      60_000,
      'the monitor to take every call',
    );
    const refusedSamples = samples.filter((s) => s.error?.code === 'budget_exceeded').length;
    const judged = mock.requests.filter((r) => String(r.body.model) === p.upstream);
    const largest = Math.max(...judged.map((r) => maxCallCost(PRICED, r.body)));
    const provider = billed.get(p.upstream) ?? 0;
    await waitFor(async () => Math.abs((await p.spend()) - provider) < 1e-6, 10_000, 'the spend to settle');
    console.info(
      JSON.stringify({
        monitor: { judged: judged.length, refusedSamples, provider, spent: await p.spend(), largest },
      }),
    );
    expect(refusedSamples).toBeGreaterThan(0);
    expect(judged.length + refusedSamples).toBe(CALLS);
    expect(provider).toBeLessThanOrEqual(LIMIT + largest);
  }, 120_000);

  it.runIf(testDbKind() === 'postgres')(
    'after Redis restarts empty, both workers report the spend the database recorded',
    async () => {
      const p = await project('gen');
      const body = { model: 'gen', messages: [{ role: 'user', content: TEXT }], max_tokens: 10 };
      for (let i = 0; i < 2; i++) expect((await p.as('POST', '/v1/chat/completions', body)).status).toBe(200);
      const provider = billed.get(p.upstream) ?? 0;
      // Written behind in batches: the database has both calls within a batch's interval.
      await waitFor(
        async () => Math.abs((await recorded(p.projectId)) - provider) < 1e-9,
        10_000,
        'the spend to be recorded',
      );
      await redis?.stop();
      await redis?.start();
      const stored = await recorded(p.projectId);
      // Asked often enough to reach both workers.
      const reported = await Promise.all(Array.from({ length: 8 }, () => p.spend()));
      console.info(JSON.stringify({ redis_restart: { provider, stored, reported } }));
      expect(stored).toBeCloseTo(provider, 9);
      for (const r of reported) expect(r).toBeCloseTo(stored, 9);
    },
    60_000,
  );
});
