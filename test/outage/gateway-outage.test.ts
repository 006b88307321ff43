/**
 * Issue 36 item 4: the gateway keeps answering while PostgreSQL is away. With the default short caches
 * (here shorter still, so that every entry has expired during the stop), a key used before the stop is
 * still authenticated from the key cache, its model still resolved, its container still known; the calls
 * are answered 200 with a log id, and every one of those task logs exists once the database is back. A
 * key never seen before answers 503, as before. Runs on a private server, in the PostgreSQL project.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type MockUpstream, startMockUpstream } from '../fixtures/mock-upstream.js';
import { testDbKind } from '../helpers/databases.js';
import { startHarness } from '../helpers/harness.js';
import { waitFor } from '../helpers/wait.js';
import { type PrivatePostgres, startPrivatePostgres } from './servers.js';

let pg: PrivatePostgres;
let mock: MockUpstream;

beforeAll(async () => {
  if (testDbKind() !== 'postgres') return;
  pg = await startPrivatePostgres();
  mock = await startMockUpstream({ record: false });
});
afterAll(async () => {
  await mock?.close();
  await pg?.destroy();
});

interface Answer {
  status: number;
  logId: string | null;
  code: string | null;
}

const REDIS_URL = process.env.EVALGATE_TEST_REDIS_URL ?? 'redis://127.0.0.1:6379';

describe.skipIf(testDbKind() !== 'postgres')('the gateway through a PostgreSQL outage', () => {
  it.each([
    ['without Redis', {}],
    [
      'with Redis',
      { EVALGATE_REDIS_URL: REDIS_URL, EVALGATE_REDIS_PREFIX: `pgout${process.pid}${Date.now()}` },
    ],
  ])(
    'answers calls of keys seen before the stop, and stores their task logs once it is back (%s)',
    {
      timeout: 90_000,
    },
    async (_name, redis: Record<string, string>) => {
      const h = await startHarness({
        database: await pg.freshDatabase(),
        env: {
          EVALGATE_KEY_CACHE_MS: '300',
          EVALGATE_MODEL_CACHE_MS: '300',
          EVALGATE_LOG_FLUSH_MS: '50',
          ...redis,
        },
      });
      try {
        expect(
          (
            await h.call('POST', '/v1/models', {
              body: {
                label: 'mock',
                provider: 'openai-compatible',
                base_url: mock.baseUrl,
                upstream_model: 'm',
              },
            })
          ).status,
        ).toBe(201);
        expect((await h.call('POST', '/v1/containers', { body: { label: 'bot' } })).status).toBe(201);
        const narrow = await h.key(['inference:write']);
        const unseen = await h.key(['inference:write']);

        const chat = async (key: string, stream: boolean, container: string | null): Promise<Answer> => {
          const res = await fetch(`${h.url}/v1/chat/completions`, {
            method: 'POST',
            headers: {
              authorization: `Bearer ${key}`,
              'content-type': 'application/json',
              ...(container ? { 'x-evalgate-container': container } : {}),
            },
            body: JSON.stringify({ model: 'mock', stream, messages: [{ role: 'user', content: 'Hi' }] }),
          });
          const text = await res.text();
          const code = res.headers.get('content-type')?.includes('json')
            ? ((JSON.parse(text) as { error?: { code?: string } }).error?.code ?? null)
            : null;
          return { status: res.status, logId: res.headers.get('x-evalgate-log-id'), code };
        };

        // Seen before the stop: both keys in both containers (the default one created on first use).
        const before: Answer[] = [];
        for (const key of [h.admin.key, narrow.key])
          for (const container of ['bot', null]) before.push(await chat(key, false, container));
        expect(before.map((a) => a.status)).toEqual([200, 200, 200, 200]);
        await h.app.services.logWriter.flush();

        await pg.stop();
        // Every cache entry has expired: the gateway must answer from what it saw before.
        await new Promise((r) => setTimeout(r, 800));
        const during: Answer[] = [];
        const until = Date.now() + 3000;
        let i = 0;
        while (Date.now() < until) {
          const key = i % 2 === 0 ? h.admin.key : narrow.key;
          const batch = await Promise.all([
            chat(key, false, 'bot'),
            chat(key, true, 'bot'),
            chat(key, false, null),
          ]);
          during.push(...batch);
          i++;
          await new Promise((r) => setTimeout(r, 50));
        }
        const never = await chat(unseen.key, false, 'bot');
        const health = await h.call('GET', '/healthz', { key: null });
        await pg.start();

        expect(during.length).toBeGreaterThan(30);
        const statuses = during.map((a) => `${a.status} ${a.code ?? ''}`);
        expect(
          new Set(statuses),
          JSON.stringify(statuses.filter((s) => !s.startsWith('200')).slice(0, 5)),
        ).toEqual(new Set(['200 ']));
        expect(during.every((a) => a.logId !== null)).toBe(true);
        // A key never seen cannot be verified without the database: 503, as before.
        expect(never).toMatchObject({ status: 503, code: 'upstream_unavailable' });
        expect(health.status).toBe(503);

        // Every answered call's task log exists once the database is back.
        const ids = [...before, ...during].map((a) => a.logId!);
        const stored = async () => {
          const found = new Set<string>();
          for (let j = 0; j < ids.length; j += 500) {
            const rows = await h.app.services.db
              .selectFrom('task_logs')
              .select('id')
              .where('id', 'in', ids.slice(j, j + 500))
              .execute()
              .catch(() => []);
            for (const r of rows) found.add(r.id);
          }
          return found;
        };
        await waitFor(async () => (await stored()).size === ids.length, 30_000, 'every task log stored');
        // And the database is used again at once: a new key works.
        expect((await chat(unseen.key, false, 'bot')).status).toBe(200);
      } finally {
        await h.close();
      }
    },
  );

  it.each([
    ['on its thread', '1'],
    ['on the main thread', '0'],
  ])(
    'spills task logs past the bound to the spool, and stores them all once the database is back (%s)',
    {
      timeout: 60_000,
    },
    async (_name, thread) => {
      const h = await startHarness({
        database: await pg.freshDatabase(),
        env: {
          EVALGATE_LOG_MAX_BUFFERED: '5',
          EVALGATE_LOG_WRITER_THREAD: thread,
          EVALGATE_LOG_FLUSH_MS: '50',
        },
      });
      try {
        await h.call('POST', '/v1/models', {
          body: { label: 'mock', provider: 'openai-compatible', base_url: mock.baseUrl, upstream_model: 'm' },
        });
        const chat = async () => {
          const res = await fetch(`${h.url}/v1/chat/completions`, {
            method: 'POST',
            headers: { authorization: `Bearer ${h.admin.key}`, 'content-type': 'application/json' },
            body: JSON.stringify({ model: 'mock', messages: [{ role: 'user', content: 'Hi' }] }),
          });
          await res.arrayBuffer();
          expect(res.status).toBe(200);
          return res.headers.get('x-evalgate-log-id')!;
        };
        const ids = [await chat()];
        await h.app.services.logWriter.flush();
        await pg.stop();
        for (let i = 0; i < 12; i++) {
          ids.push(await chat());
          if (i === 0) await h.app.services.logWriter.flush();
        }
        await h.app.services.logWriter.flush();
        const during = h.app.services.logWriter.stats();
        // 5 held in memory, the other 7 in the spool file; none lost.
        expect(during).toMatchObject({ accepted: 13, written: 1, failed: 0, buffered: 12, spilled: 7 });
        const metrics = await h.call('GET', '/metrics');
        expect(metrics.text).toMatch(/^evalgate_log_writer_spilled 7$/m);
        expect(metrics.text).toMatch(/^evalgate_log_writer_dropped_total 0$/m);
        await pg.start();

        await waitFor(
          () => h.app.services.logWriter.stats().buffered === 0,
          30_000,
          'spilled task logs to be written',
        );
        expect(h.app.services.logWriter.stats()).toMatchObject({
          accepted: 13,
          written: 13,
          failed: 0,
          spilled: 0,
        });
        const rows = await h.app.services.db
          .selectFrom('task_logs')
          .select('id')
          .where('id', 'in', ids)
          .execute();
        expect(rows.map((r) => r.id).sort()).toEqual([...ids].sort());
      } finally {
        await h.close();
      }
    },
  );
});
