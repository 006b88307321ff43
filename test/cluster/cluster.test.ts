import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type DatabaseHandle, openDatabase } from '../../src/db/database.js';
import { type MockUpstream, startMockUpstream } from '../fixtures/mock-upstream.js';
import { type FreshDatabase, freshDatabase, testDbKind } from '../helpers/databases.js';
import { requestOnFreshConnection } from '../helpers/fresh-connection.js';
import { unusedPort } from '../helpers/ports.js';
import { descendants, type EvalgateProcess, startEvalgate } from '../helpers/processes.js';
import { waitFor } from '../helpers/wait.js';

/**
 * `evalgate serve --workers 2` as a child process (the suite's database): what holds per process holds
 * for the whole server — a key's rate limit, a revocation, every answered call stored once — and the
 * cluster survives a killed worker and stops without losing a stream in flight.
 */

describe(`serve --workers 2 (${testDbKind()})`, () => {
  let db: FreshDatabase;
  let mock: MockUpstream;
  let server: EvalgateProcess;
  let port: number;
  let admin: string;
  let handle: DatabaseHandle;

  /** One request on a connection of its own (no keep-alive), so that the kernel spreads them over workers. */
  const call = (
    method: string,
    path: string,
    options: { key?: string; body?: unknown; headers?: Record<string, string> } = {},
  ) => requestOnFreshConnection(port, method, path, options);

  async function newKey(name: string): Promise<{ id: string; key: string }> {
    const res = await call('POST', '/v1/api-keys', { key: admin, body: { name } });
    expect(res.status).toBe(201);
    return { id: res.body.id, key: res.body.key };
  }

  const chat = (key: string, container: string, stream = false) =>
    call('POST', '/v1/chat/completions', {
      key,
      headers: { 'X-Evalgate-Container': container },
      body: { model: 'mock', messages: [{ role: 'user', content: 'Hi' }], stream },
    });

  async function storedIn(container: string): Promise<number> {
    const row = await handle.db
      .selectFrom('task_logs')
      .innerJoin('containers', 'containers.id', 'task_logs.container_id')
      .select((eb) => eb.fn.countAll<number | string>().as('n'))
      .where('containers.label', '=', container)
      .executeTakeFirstOrThrow();
    return Number(row.n);
  }

  const workerPids = () => descendants(server.pid, 'serve');

  beforeAll(async () => {
    mock = await startMockUpstream({ record: false });
    db = await freshDatabase();
    port = await unusedPort();
    server = await startEvalgate(
      ['serve', '--workers', '2', '--port', String(port)],
      {
        EVALGATE_DATABASE_URL: db.url,
        EVALGATE_DATA_DIR: db.dataDir,
        EVALGATE_RATE_LIMIT_PER_MINUTE: '60',
        EVALGATE_RATE_LIMIT_BURST: '10',
      },
      /Dashboard:/,
      60_000,
    );
    admin = /(eg_[0-9A-Za-z]{43})/.exec(server.output())?.[1] ?? '';
    expect(admin).not.toBe('');
    // The banner is printed once, by the primary.
    expect(server.output().match(/Created project 'default'/g)).toHaveLength(1);
    handle = await openDatabase(db.url);
    const model = await call('POST', '/v1/models', {
      key: admin,
      body: {
        label: 'mock',
        provider: 'openai-compatible',
        base_url: mock.baseUrl,
        upstream_model: 'mock-model',
        input_price_per_mtok: 1,
        output_price_per_mtok: 2,
      },
    });
    expect(model.status).toBe(201);
    for (const label of ['once', 'streams']) {
      expect((await call('POST', '/v1/containers', { key: admin, body: { label } })).status).toBe(201);
    }
  }, 90_000);

  afterAll(async () => {
    await server?.kill();
    await handle?.close();
    await mock?.close();
    await db?.drop();
  });

  it('runs two workers under the primary, which serves nothing itself', () => {
    expect(workerPids()).toHaveLength(2);
  });

  it("holds a key's rate limit across workers", async () => {
    const { key } = await newKey('burst');
    const replies = await Promise.all(
      Array.from({ length: 30 }, () => call('GET', '/v1/evaluators', { key })),
    );
    const ok = replies.filter((r) => r.status === 200).length;
    const limited = replies.filter((r) => r.status === 429).length;
    // One process would let the burst (10) pass, plus at most one refilled in the meantime.
    expect(ok).toBeGreaterThanOrEqual(9);
    expect(ok).toBeLessThanOrEqual(11);
    expect(ok + limited).toBe(30);
  });

  it('refuses a revoked key in every worker at once', async () => {
    const { id, key } = await newKey('revoked');
    // Warm both workers' key caches.
    const before = await Promise.all(Array.from({ length: 8 }, () => call('GET', '/v1/evaluators', { key })));
    expect(before.every((r) => r.status === 200)).toBe(true);
    expect((await call('DELETE', `/v1/api-keys/${id}`, { key: admin })).status).toBeLessThan(300);
    const after = await Promise.all(Array.from({ length: 40 }, () => call('GET', '/v1/evaluators', { key })));
    expect(after.map((r) => r.status).filter((s) => s !== 401)).toEqual([]);
  });

  it('stores every answered call exactly once', async () => {
    const keys = await Promise.all([1, 2, 3, 4].map((i) => newKey(`calls-${i}`)));
    const replies = await Promise.all(
      keys.flatMap(({ key }) => Array.from({ length: 8 }, () => chat(key, 'once'))),
    );
    const ok = replies.filter((r) => r.status === 200).length;
    expect(ok).toBe(32);
    await waitFor(async () => (await storedIn('once')) >= ok, 15_000, 'task logs written');
    await new Promise((r) => setTimeout(r, 500));
    expect(await storedIn('once')).toBe(ok);
  });

  it('replaces a killed worker while the other keeps serving', async () => {
    const [victim, survivor] = workerPids();
    expect(victim).toBeDefined();
    process.kill(victim!, 'SIGKILL');
    // A connection handed to the worker at the instant it dies is lost with it (as with any killed
    // process); once the primary saw the exit, every new connection goes to a live worker.
    await waitFor(() => server.output().includes(`worker ${victim} exited`), 10_000, 'exit noticed');
    const during = await Promise.all(Array.from({ length: 10 }, () => call('GET', '/healthz')));
    expect(during.every((r) => r.status === 200)).toBe(true);
    await waitFor(
      () => {
        const pids = workerPids();
        return pids.length === 2 && !pids.includes(victim!) && pids.includes(survivor!);
      },
      20_000,
      'worker replaced',
    );
    // The new worker serves (new connections land on both).
    await waitFor(
      async () =>
        (await Promise.all(Array.from({ length: 6 }, () => call('GET', '/healthz')))).every(
          (r) => r.status === 200,
        ),
      20_000,
      'replacement serving',
    );
    // The survivor answers too, so the above holds even if the replacement never serves: kill the
    // survivor, and once the primary saw it go, only the replacement (or a newer one) can answer.
    process.kill(survivor!, 'SIGKILL');
    await waitFor(
      () => server.output().includes(`worker ${survivor} exited`),
      10_000,
      'survivor exit noticed',
    );
    await waitFor(
      async () =>
        call('GET', '/healthz').then(
          (r) => r.status === 200,
          () => false,
        ),
      20_000,
      'replacement answers alone',
    );
    // Back to two workers for the tests that follow.
    await waitFor(
      () => {
        const pids = workerPids();
        return pids.length === 2 && !pids.includes(survivor!);
      },
      20_000,
      'survivor replaced',
    );
  }, 90_000);

  it('finishes the streams in flight and their task logs on SIGTERM', async () => {
    const { key } = await newKey('streams');
    const before = mock.stats.requests;
    mock.set({ chunkDelayMs: 40, reply: () => 'x'.repeat(8 * 40) });
    const streams = Array.from({ length: 4 }, () => chat(key, 'streams', true));
    await mock.until(() => mock.stats.requests >= before + 4, 10_000);
    await new Promise((r) => setTimeout(r, 200));
    await server.stop();
    const replies = await Promise.all(streams);
    for (const reply of replies) {
      expect(reply.status).toBe(200);
      expect(reply.text.trimEnd().endsWith('data: [DONE]')).toBe(true);
    }
    expect(await storedIn('streams')).toBe(4);
    expect(await storedIn('once')).toBe(32);
    expect(workerPids()).toEqual([]);
  }, 60_000);
});
