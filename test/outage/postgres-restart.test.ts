/**
 * Issue 15: a PostgreSQL restart under load. The process must survive it, answer 503 in the envelope
 * while the database is away, recover on its own, and store the task log of every call it answered.
 * Runs on a private server (stopping the suite's shared one would break every other test), once: in
 * the PostgreSQL project.
 */
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type MockUpstream, startMockUpstream } from '../fixtures/mock-upstream.js';
import { testDbKind } from '../helpers/databases.js';
import { type Harness, startHarness } from '../helpers/harness.js';
import { waitFor } from '../helpers/wait.js';
import { type PrivatePostgres, startPrivatePostgres } from './servers.js';

interface Sample {
  kind: 'chat' | 'stream' | 'read' | 'write' | 'health';
  status: number;
  /** Milliseconds since the load started. */
  at: number;
  logId: string | null;
  body: any;
  unavailable: string | null;
}

let pg: PrivatePostgres;
let mock: MockUpstream;

beforeAll(async () => {
  if (testDbKind() !== 'postgres') return;
  pg = await startPrivatePostgres();
  mock = await startMockUpstream();
});
afterAll(async () => {
  await mock?.close();
  await pg?.destroy();
});

/** An app on the private server with a registered model (served by the mock) and a container. */
async function startApp(env: Record<string, string> = {}): Promise<Harness> {
  const h = await startHarness({
    database: await pg.freshDatabase(),
    env: {
      // Cached long enough that calls need no database while it is away: only recording does.
      EVALGATE_KEY_CACHE_MS: '600000',
      EVALGATE_MODEL_CACHE_MS: '600000',
      EVALGATE_RUN_POLL_MS: '200',
      ...env,
    },
  });
  const model = await h.call('POST', '/v1/models', {
    body: { label: 'mock', provider: 'openai-compatible', base_url: mock.baseUrl, upstream_model: 'm' },
  });
  expect(model.status).toBe(201);
  expect((await h.call('POST', '/v1/containers', { body: { label: 'bot' } })).status).toBe(201);
  return h;
}

async function chat(
  h: Harness,
  stream: boolean,
): Promise<{ status: number; logId: string | null; body: any }> {
  const res = await fetch(`${h.url}/v1/chat/completions`, {
    method: 'POST',
    headers: {
      authorization: `Bearer ${h.admin.key}`,
      'content-type': 'application/json',
      'x-evalgate-container': 'bot',
    },
    body: JSON.stringify({ model: 'mock', stream, messages: [{ role: 'user', content: 'Hi' }] }),
  });
  const text = await res.text();
  const json = res.headers.get('content-type')?.includes('json') ? JSON.parse(text) : text;
  return { status: res.status, logId: res.headers.get('x-evalgate-log-id'), body: json };
}

/** Ids among `ids` stored in task_logs (read through the app's own connection). */
async function storedIds(h: Harness, ids: string[]): Promise<Set<string>> {
  const found = new Set<string>();
  for (let i = 0; i < ids.length; i += 500) {
    const rows = await h.app.services.db
      .selectFrom('task_logs')
      .select('id')
      .where('id', 'in', ids.slice(i, i + 500))
      .execute();
    for (const r of rows) found.add(r.id);
  }
  return found;
}

const isDatabase503 = (s: Sample) =>
  s.status === 503 &&
  s.body?.error?.code === 'upstream_unavailable' &&
  s.body.error.details?.dependency === 'database';

describe.skipIf(testDbKind() !== 'postgres')('PostgreSQL restart under load', () => {
  it('survives, answers 503 while the database is away, recovers, and stores every answered call', {
    timeout: 60_000,
  }, async () => {
    const h = await startApp();
    const warnings: string[] = [];
    h.services.logger.warn = ((message: string) => warnings.push(String(message))) as never;
    try {
      // The writer's thread connects with the first record.
      expect((await chat(h, false)).status).toBe(200);
      await h.app.services.logWriter.flush();

      const samples: Sample[] = [];
      const errors: string[] = [];
      const t0 = Date.now();
      let running = true;
      const loop = async (kind: Sample['kind'], once: () => Promise<Omit<Sample, 'kind' | 'at'>>) => {
        while (running) {
          try {
            samples.push({ kind, at: Date.now() - t0, ...(await once()) });
          } catch (err) {
            errors.push(`${kind}: ${(err as Error).message}`);
          }
          await new Promise((r) => setTimeout(r, 10));
        }
      };
      const api = async (method: string, path: string, body?: unknown) => {
        // h.call checks every answer against the OpenAPI document (503s included) and throws otherwise.
        const res = await h.call(method, path, body === undefined ? {} : { body });
        return { status: res.status, body: res.body, logId: null, unavailable: null };
      };
      // A connection checked out between two queries (as a transaction holds one) when the server ends
      // its session: the 'error' the client emits then must not end the process.
      let held = 0;
      const holdConnection = async () => {
        while (running) {
          await h.app.services.db
            .transaction()
            .execute(async (trx) => {
              await sql`select 1`.execute(trx);
              held++;
              await new Promise((r) => setTimeout(r, 50));
              await sql`select 1`.execute(trx);
            })
            .catch(() => {});
          await new Promise((r) => setTimeout(r, 10));
        }
      };
      let n = 0;
      const load = Promise.all([
        holdConnection(),
        holdConnection(),
        ...[1, 2, 3].map(() => loop('chat', async () => ({ ...(await chat(h, false)), unavailable: null }))),
        loop('stream', async () => ({ ...(await chat(h, true)), unavailable: null })),
        loop('read', () => api('GET', '/v1/containers?limit=5')),
        loop('write', () => api('POST', '/v1/containers', { label: `c${++n}` })),
        loop('health', async () => {
          const res = await h.call('GET', '/healthz', { key: null });
          return {
            status: res.status,
            body: res.body,
            logId: null,
            unavailable: res.headers.get('x-evalgate-unavailable'),
          };
        }),
      ]);

      await new Promise((r) => setTimeout(r, 1000));
      await pg.stop();
      const down = Date.now() - t0;
      // While it is away: /healthz says so, and requests that need the database get 503.
      await waitFor(
        () => samples.some((s) => s.kind === 'health' && s.at > down && s.status === 503),
        10_000,
        '/healthz to answer 503',
      );
      await waitFor(
        () => samples.some((s) => s.kind === 'read' && s.at > down && isDatabase503(s)),
        10_000,
        'a read to answer 503',
      );
      await new Promise((r) => setTimeout(r, 1500));
      const upAt = Date.now() - t0;
      await pg.start();
      const up = Date.now() - t0;
      await waitFor(
        () => samples.some((s) => s.kind === 'health' && s.at > up && s.status === 200),
        20_000,
        '/healthz to answer 200 again',
      );
      await waitFor(
        () => samples.some((s) => s.kind === 'read' && s.at > up && s.status === 200),
        20_000,
        'reads to succeed again',
      );
      await new Promise((r) => setTimeout(r, 500));
      running = false;
      await load;

      // The process survived: every request got an answer, every answer in the documented shapes.
      expect(errors).toEqual([]);
      expect(held).toBeGreaterThan(0);
      for (const s of samples) {
        const allowed = s.kind === 'write' ? [201, 503] : [200, 503];
        expect(allowed, `${s.kind} at ${s.at} ms: ${s.status} ${JSON.stringify(s.body)}`).toContain(s.status);
        if (s.status !== 503) continue;
        if (s.kind === 'health') {
          expect(s.body).toEqual({ ok: false });
          expect(s.unavailable).toBe('database');
        } else {
          expect(isDatabase503(s), JSON.stringify(s.body)).toBe(true);
        }
      }
      const healthAway = samples.filter((s) => s.kind === 'health' && s.at > down + 200 && s.at < upAt);
      expect(healthAway.length).toBeGreaterThan(0);
      expect(healthAway.every((s) => s.status === 503)).toBe(true);
      const last = (kind: Sample['kind']) => samples.filter((s) => s.kind === kind).at(-1)!;
      expect(last('health')).toMatchObject({ status: 200, body: { ok: true } });
      expect(last('read').status).toBe(200);
      expect(last('write').status).toBe(201);

      // Calls kept being answered while the database was away (caches), and each carried a log id.
      const answered = samples.filter((s) => (s.kind === 'chat' || s.kind === 'stream') && s.status === 200);
      expect(answered.every((s) => s.logId !== null)).toBe(true);
      expect(answered.filter((s) => s.at > down && s.at < upAt).length).toBeGreaterThan(0);
      expect(answered.filter((s) => s.kind === 'stream').length).toBeGreaterThan(0);

      // Every answered call is stored once the database is back: none was dropped.
      const ids = answered.map((s) => s.logId!);
      await waitFor(
        async () => (await storedIds(h, ids)).size === ids.length,
        20_000,
        'held task logs to be stored',
      );
      // The writer's thread reports its totals after its commits: a flush waits for them.
      await h.app.services.logWriter.flush();
      const stats = h.app.services.logWriter.stats();
      const said = `stats ${JSON.stringify(stats)}; warnings:\n${warnings.join('\n')}`;
      expect(stats.failed, said).toBe(0);
      expect(stats.buffered, said).toBe(0);
      expect(stats.written, said).toBe(ids.length + 1);
      // Seqs stay gap-free across the failed attempts.
      const seqs = await h.app.services.db.selectFrom('task_logs').select('seq').orderBy('seq').execute();
      expect(seqs.map((r) => Number(r.seq))).toEqual(seqs.map((_, i) => i + 1));
      // The outage is reported once, as it starts, and once as it ends (none dropped).
      expect(warnings.filter((w) => w.startsWith('Task logs cannot be written'))).toHaveLength(1);
      expect(warnings.filter((w) => /takes task logs again .*no records were dropped/.test(w))).toHaveLength(
        1,
      );
    } finally {
      await h.close();
    }
  });

  it.each([
    ['on its thread', '1'],
    ['on the main thread', '0'],
  ])(
    'bounds what the writer holds through an outage (%s): the excess is dropped, counted and reported once',
    {
      timeout: 60_000,
    },
    async (_name, thread) => {
      // Without the spool (which keeps the excess on disk instead: gateway-outage.test.ts).
      const h = await startApp({
        EVALGATE_LOG_MAX_BUFFERED: '5',
        EVALGATE_LOG_WRITER_THREAD: thread,
        EVALGATE_LOG_SPOOL: '0',
      });
      const warnings: string[] = [];
      h.services.logger.warn = ((message: string) => warnings.push(String(message))) as never;
      try {
        const first = await chat(h, false);
        await h.app.services.logWriter.flush();
        expect(h.app.services.logWriter.stats()).toMatchObject({ written: 1, failed: 0 });

        await pg.stop();
        const during: string[] = [];
        for (let i = 0; i < 12; i++) {
          const res = await chat(h, false);
          expect(res.status).toBe(200);
          during.push(res.logId!);
          // Let the writer try (and fail) in between, so that the outage is noticed before the bound is hit.
          if (i === 0) await h.app.services.logWriter.flush();
        }
        await h.app.services.logWriter.flush();
        expect(h.app.services.logWriter.stats()).toMatchObject({
          accepted: 6,
          written: 1,
          failed: 7,
          buffered: 5,
        });
        await pg.start();

        await waitFor(
          () => h.app.services.logWriter.stats().buffered === 0,
          20_000,
          'held task logs to be written',
        );
        expect(h.app.services.logWriter.stats()).toMatchObject({ accepted: 6, written: 6, failed: 7 });
        // The first five of the outage were held and stored; the rest were dropped.
        const stored = await storedIds(h, [first.logId!, ...during]);
        expect([...stored].sort()).toEqual([first.logId!, ...during.slice(0, 5)].sort());
        expect(warnings.filter((w) => w.startsWith('Task logs cannot be written'))).toHaveLength(1);
        expect(warnings.filter((w) => /takes task logs again .*7 records were dropped/.test(w))).toHaveLength(
          1,
        );

        // Metrics tell the same.
        const metrics = await h.call('GET', '/metrics');
        expect(metrics.text).toMatch(/^evalgate_log_writer_dropped_total 7$/m);
      } finally {
        await h.close();
      }
    },
  );
});
