import { afterEach, describe, expect, it } from 'vitest';
import { outage } from '../helpers/databases.js';
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
  await gw.h.app.deps.logWriter.flush();
  expect(gw.h.app.deps.logWriter.stats().written).toBe(1);
  return gw.h.app.deps.logWriter.stats().failed;
}

async function traffic(gw: Gateway): Promise<void> {
  const answers = await Promise.all(
    Array.from({ length: CALLS }, () => gw.client().chat.completions.create({ model, messages: hi })),
  );
  expect(answers.every((a) => a.choices[0]!.message.content === 'Hello from the mock upstream.')).toBe(true);
}

describe('database outage during traffic', () => {
  it('keeps serving calls while the writer thread counts what it cannot write, then records again', async () => {
    g = await startGateway();
    const before = await warm(g);
    const restore = await outage(g.h.database.url);
    try {
      await traffic(g);
      await g.h.app.deps.logWriter.flush();
    } finally {
      await restore();
    }
    const stats = g.h.app.deps.logWriter.stats();
    expect(stats.failed).toBe(before + CALLS);
    expect(stats.buffered).toBe(0);

    // Once the database is back, calls are recorded again.
    const { response } = await g.client().chat.completions.create({ model, messages: hi }).withResponse();
    const id = response.headers.get('x-evalgate-log-id');
    expect((await g.logs('default')).map((l) => l.id)).toContain(id);
    expect(g.h.app.deps.logWriter.stats().written).toBe(2);
  });

  it('keeps serving calls with the writer on the main thread when its connection is gone', async () => {
    g = await startGateway({ EVALGATE_LOG_WRITER_THREAD: '0' });
    const before = await warm(g);
    await g.h.app.deps.db.destroy();
    await traffic(g);
    await g.h.app.deps.logWriter.flush();
    expect(g.h.app.deps.logWriter.stats().failed).toBe(before + CALLS);
  });
});
