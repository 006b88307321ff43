import { describe, expect, it } from 'vitest';
import { createSpanLane, SpanStoreUnavailableError } from '../../src/capture/span-lane.js';
import { waitFor } from '../helpers/wait.js';

// The capture processor's span lane alone, over an in-memory sink: no database, so it runs once, in the SQLite project.
describe.skipIf(process.env.EVALGATE_TEST_DB === 'postgres')('the span lane', () => {
  it('takes a write larger than its bound into an empty buffer, and refuses one past the bound after it', async () => {
    const stored: number[] = [];
    let release = () => {};
    const gate = new Promise<void>((resolve) => {
      release = resolve;
    });
    const writer = createSpanLane<number>({
      store: async (batch) => {
        await gate;
        for (const n of batch) stored.push(n);
      },
      batchSize: 1_000,
      flushMs: 5,
      maxBuffered: 50_000,
    });
    // 50,001 spans in one request: more than the bound, but nothing else is held, so it can only be taken
    // now (refused, it would be refused at every retry).
    const big = Array.from({ length: 50_001 }, (_, i) => i);
    expect(writer.write(big)).toBe(true);
    // While that is held, a write that would pass the bound is refused (the caller answers "retry later").
    expect(writer.write([1, 2, 3])).toBe(false);
    release();
    await writer.flush();
    expect(stored).toHaveLength(50_001);
    // Once written, the same size is taken again.
    expect(writer.write(big)).toBe(true);
    await writer.close();
    expect(writer.stats()).toMatchObject({ accepted: 100_002, written: 100_002, failed: 0, buffered: 0 });
  });

  it('lets the event loop turn between two batches of a backlog written by a synchronous sink', async () => {
    // The SQLite sink's work is synchronous: without a turn between batches, a backlog would be written
    // in one stretch, and nothing else (a gateway call) would be answered until its end.
    const order: string[] = [];
    const writer = createSpanLane<number>({
      store: async (batch) => {
        order.push(`batch ${batch[0]}`);
      },
      batchSize: 10,
      flushMs: 1,
      maxBuffered: 1_000,
    });
    expect(writer.write(Array.from({ length: 40 }, (_, i) => i))).toBe(true);
    const flushed = writer.flush();
    setImmediate(() => order.push('another task'));
    await flushed;
    expect(order.indexOf('another task')).toBeGreaterThan(0);
    expect(order.indexOf('another task')).toBeLessThan(order.length - 1);
    expect(order.filter((o) => o.startsWith('batch'))).toEqual([
      'batch 0',
      'batch 10',
      'batch 20',
      'batch 30',
    ]);
    await writer.close();
  });

  it('keeps a batch its store could not take for a passing reason (its thread stopped) and retries it', async () => {
    const stored: number[] = [];
    let attempts = 0;
    const writer = createSpanLane<number>({
      store: async (batch) => {
        attempts += 1;
        if (attempts === 1) throw new SpanStoreUnavailableError("The span store's thread stopped");
        for (const n of batch) stored.push(n);
      },
      batchSize: 10,
      flushMs: 1,
      maxBuffered: 100,
      retryMs: 10,
    });
    expect(writer.write([1, 2, 3])).toBe(true);
    // A flush does not wait through an outage: the retry comes retryMs later.
    await writer.flush();
    await waitFor(() => stored.length === 3, 5_000, 'the batch to be retried');
    expect(attempts).toBe(2);
    expect(stored).toEqual([1, 2, 3]);
    expect(writer.stats()).toMatchObject({ written: 3, failed: 0, buffered: 0 });
    expect(writer.bound).toBe(100);
    await writer.close();
  });

  it('takes writes up to the bound while others are held', () => {
    const writer = createSpanLane<number>({
      store: () => new Promise(() => {}),
      batchSize: 100,
      flushMs: 60_000,
      maxBuffered: 10,
    });
    expect(writer.write([1, 2, 3, 4, 5])).toBe(true);
    expect(writer.write([6, 7, 8, 9, 10])).toBe(true);
    expect(writer.write([11])).toBe(false);
    expect(writer.stats().buffered).toBe(10);
  });

  it('takes a write of more than its bound in parts, each as room frees, never holding more than the bound', async () => {
    const stored: number[] = [];
    let most = 0;
    const writer = createSpanLane<number>({
      store: async (batch) => {
        most = Math.max(most, writer.stats().buffered);
        await new Promise((r) => setTimeout(r, 2));
        for (const n of batch) stored.push(n);
      },
      batchSize: 10,
      flushMs: 5,
      maxBuffered: 25,
    });
    const items = Array.from({ length: 200 }, (_, i) => i);
    expect(await writer.writeAll(items, 5_000)).toBe(true);
    await writer.flush();
    expect(stored).toEqual(items);
    expect(most).toBeLessThanOrEqual(25);
    await writer.close();
  });

  it('gives up on a write in parts when no room frees within its wait (a store genuinely behind)', async () => {
    const writer = createSpanLane<number>({
      store: () => new Promise(() => {}),
      batchSize: 100,
      flushMs: 60_000,
      maxBuffered: 10,
    });
    const t0 = Date.now();
    expect(await writer.writeAll([1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12], 50)).toBe(false);
    expect(Date.now() - t0).toBeLessThan(1_000);
    // What fitted was taken (a retry stores it once).
    expect(writer.stats().buffered).toBe(10);
    const left = new AbortController();
    const waiting = writer.writeAll([13], 60_000, left.signal);
    left.abort();
    expect(await waiting).toBe(false);
  });
});
