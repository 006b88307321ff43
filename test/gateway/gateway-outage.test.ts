import { afterEach, describe, expect, it } from 'vitest';
import { outage } from '../helpers/databases.js';
import { waitFor } from '../helpers/wait.js';
import { type Gateway, startGateway } from './gateway-helpers.js';

const model = 'openai/gpt-4o-mini';
const hi = [{ role: 'user' as const, content: 'Hi' }];
const CALLS = 20;

let g: Gateway | null = null;
afterEach(async () => {
  // A test may leave its app without a database; dropping must not be skipped.
  await g?.close().catch(async () => {
    await g?.h.database.drop();
    await g?.mock.close();
  });
  g = null;
});

/** Warms the key, model and container caches with one recorded call; returns the writer's failure count. */
async function warm(gw: Gateway): Promise<number> {
  await gw.client().chat.completions.create({ model, messages: hi });
  await gw.h.app.services.logWriter.flush();
  expect(gw.h.app.services.logWriter.stats().written).toBe(1);
  return gw.h.app.services.logWriter.stats().failed;
}

async function traffic(gw: Gateway): Promise<void> {
  const answers = await Promise.all(
    Array.from({ length: CALLS }, () => gw.client().chat.completions.create({ model, messages: hi })),
  );
  expect(answers.every((a) => a.choices[0]!.message.content === 'Hello from the mock upstream.')).toBe(true);
}

describe('database outage during traffic', () => {
  it('keeps serving calls while the database is away, holds their task logs, and writes them when it returns', async () => {
    // No run executor: on SQLite its writes would wait out the busy timeout on the locked database.
    g = await startGateway({ EVALGATE_SERVE_EXECUTES: '0' });
    const before = await warm(g);
    const restore = await outage(g.h.database.url);
    try {
      await traffic(g);
      // A flush during the outage returns after one failed attempt; the records stay held.
      await g.h.app.services.logWriter.flush();
      const held = g.h.app.services.logWriter.stats();
      expect(held.failed).toBe(before);
      expect(held.buffered).toBe(CALLS);
    } finally {
      await restore();
    }
    // Once the database is back, what was held is written, and new calls are recorded again.
    const { response } = await g.client().chat.completions.create({ model, messages: hi }).withResponse();
    const id = response.headers.get('x-evalgate-log-id');
    await waitFor(() => g!.h.app.services.logWriter.stats().written === 1 + CALLS + 1, 15_000);
    await g.h.app.services.logWriter.flush();
    const stats = g.h.app.services.logWriter.stats();
    expect(stats).toMatchObject({ failed: before, buffered: 0, written: 1 + CALLS + 1 });
    const logs = (await g.logs('default')).map((l) => l.id);
    expect(logs).toContain(id);
    expect(logs).toHaveLength(1 + CALLS + 1);
  });

  it('keeps serving calls with the writer on the main thread when its connection is gone', async () => {
    g = await startGateway({ EVALGATE_LOG_WRITER_THREAD: '0' });
    const before = await warm(g);
    await g.h.app.services.db.destroy();
    await traffic(g);
    await g.h.app.services.logWriter.flush();
    expect(g.h.app.services.logWriter.stats().failed).toBe(before + CALLS);
  });
});
