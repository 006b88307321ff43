import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PG_ADMIN_URL, testDbKind } from '../helpers/databases.js';
import { type Harness, startHarness } from '../helpers/harness.js';

async function admin<T>(work: (client: import('pg').Client) => Promise<T>): Promise<T> {
  const { default: pg } = await import('pg');
  const client = new pg.Client({ connectionString: PG_ADMIN_URL });
  await client.connect();
  try {
    return await work(client);
  } finally {
    await client.end();
  }
}

/** /healthz's 503 is its documented `{"ok":false}` (issue 2), not the error envelope. */
async function health(target: Harness) {
  const res = await target.call('GET', '/healthz', { key: null });
  expect(res.headers.get('content-type')).toMatch(/application\/json/);
  return { status: res.status, body: JSON.parse(res.text) };
}

let h: Harness;
beforeAll(async () => {
  h = await startHarness();
});
afterAll(async () => {
  await h.close();
});

describe('/healthz', () => {
  it('answers {"ok":true} without a key while the database answers', async () => {
    const res = await h.call('GET', '/healthz', { key: null });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ ok: true });
    // A key, even a wrong one, changes nothing.
    expect((await h.call('GET', '/healthz', { key: 'nonsense' })).body).toEqual({ ok: true });
  });

  it.runIf(testDbKind() === 'postgres')(
    'answers 503 {"ok":false} while PostgreSQL refuses connections, and recovers',
    async () => {
      const name = new URL(h.database.url).pathname.slice(1);
      await admin(async (c) => {
        await c.query(`ALTER DATABASE ${name} ALLOW_CONNECTIONS false`);
        await c.query('SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = $1', [name]);
      });
      try {
        expect(await health(h)).toEqual({ status: 503, body: { ok: false } });
        // A request that needs the database (with a key not cached yet) answers 503 too.
        const api = await h.call('GET', '/v1/evaluators', { key: `eg_${'Q'.repeat(43)}` });
        expect(api.status).toBe(503);
        expect(api.body.error.code).toBe('upstream_unavailable');
      } finally {
        await admin((c) => c.query(`ALTER DATABASE ${name} ALLOW_CONNECTIONS true`));
      }
      const up = await h.call('GET', '/healthz', { key: null });
      expect(up.status).toBe(200);
      expect(up.body).toEqual({ ok: true });
    },
  );

  it('answers 503 {"ok":false} once the database handle is gone', async () => {
    const own = await startHarness({ database: h.database });
    try {
      await own.app.services.database.close();
      expect(await health(own)).toEqual({ status: 503, body: { ok: false } });
    } finally {
      await own.close();
    }
    // The other instance, with its own handle, is unaffected.
    expect((await h.call('GET', '/healthz', { key: null })).body).toEqual({ ok: true });
  });
});
