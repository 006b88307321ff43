import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { pruneTraces } from '../../src/traces/retention.js';
import { type Harness, startHarness } from '../helpers/harness.js';
import { sdkProvider, settled } from './helpers.js';

/** Retention: spans and traces older than EVALGATE_TRACE_RETENTION_DAYS go, in bounded batches. */
let h: Harness;
beforeAll(async () => {
  h = await startHarness({ env: { EVALGATE_TRACE_RETENTION_DAYS: '7' } });
});
afterAll(async () => {
  await h.close();
});

async function trace(spans: number): Promise<string> {
  const provider = sdkProvider(h, { protocol: 'protobuf' });
  const tracer = provider.getTracer('retention');
  let id = '';
  tracer.startActiveSpan('root', (root) => {
    id = root.spanContext().traceId;
    for (let i = 0; i < spans - 1; i++) tracer.startSpan(`child ${i}`).end();
    root.end();
  });
  await provider.forceFlush();
  await provider.shutdown();
  await settled(h);
  return id;
}

describe('trace retention', () => {
  it('deletes expired spans and traces in batches, keeps the others', async () => {
    const old = await trace(5);
    const fresh = await trace(3);
    const longAgo = new Date(Date.now() - 30 * 86_400_000).toISOString();
    await h.services.db
      .updateTable('spans')
      .set({ received_at: longAgo })
      .where('trace_id', '=', old)
      .execute();
    await h.services.db
      .updateTable('traces')
      .set({ updated_at: longAgo })
      .where('trace_id', '=', old)
      .execute();

    // Batches of 2: three rounds for the 5 spans.
    const cutoff = new Date(Date.now() - 7 * 86_400_000).toISOString();
    expect(await pruneTraces(h.services.db, cutoff, 2)).toEqual({ spans: 5, traces: 1 });
    expect((await h.call('GET', `/v1/traces/${old}`)).status).toBe(404);
    const kept = await h.call('GET', `/v1/traces/${fresh}`);
    expect(kept.body.spans).toHaveLength(3);
    expect((await h.call('GET', '/v1/traces')).body.data.map((t: { id: string }) => t.id)).toEqual([fresh]);
    // The server's own pass (EVALGATE_TRACE_RETENTION_DAYS=7) finds nothing more to delete.
    expect(await h.services.traces.prune()).toEqual({ spans: 0, traces: 0 });
    // A week on, the fresh trace expires too.
    expect(await h.services.traces.prune(new Date(Date.now() + 8 * 86_400_000))).toEqual({
      spans: 3,
      traces: 1,
    });
  });
});
