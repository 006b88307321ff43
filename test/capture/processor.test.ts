/**
 * The capture processor with a fake store and fake exporters: every record journaled before the store
 * has it, the store and each exporter handed records in the order they were written, an exporter that
 * fails held and retried without losing or repeating records, shutdown exporting what is queued, records
 * past the store's bound kept in the journal and handed over again, and a dead process's journal replayed
 * to the store only.
 */
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import type { CaptureExporter, ExportResult } from '../../src/capture/export-queue.js';
import { createCaptureProcessor } from '../../src/capture/processor.js';
import { readSpoolFile, SPOOL_FOLDER } from '../../src/capture/spool.js';
import { INGESTED_LOG_PREFIX, type LogWriter, type TaskLogRecord } from '../../src/capture/types.js';
import { openDatabase } from '../../src/db/database.js';
import { freshDatabase } from '../helpers/databases.js';
import { tempDirs } from '../helpers/temp.js';
import { waitFor } from '../helpers/wait.js';

const temps = tempDirs('evalgate-processor-');
afterAll(() => temps.removeAll());

function record(id: string, over: Partial<TaskLogRecord> = {}): TaskLogRecord {
  return {
    id,
    projectId: 'prj_x',
    containerId: 'ctr_x',
    model: 'm',
    output: 'hello',
    usage: null,
    latencyMs: 1,
    cost: 0,
    status: 'success',
    error: null,
    metadata: {},
    createdAt: new Date().toISOString(),
    ...over,
  };
}

/** A store that takes up to `bound` unsettled records and settles them when told (or at close). */
function fakeStore(bound = Number.POSITIVE_INFINITY) {
  const taken: string[] = [];
  const pending: string[] = [];
  let written = 0;
  let dropped = 0;
  const store: LogWriter & { taken: string[]; settle(n?: number): void } = {
    taken,
    settle(n = pending.length) {
      written += pending.splice(0, n).length;
    },
    write(r) {
      if (pending.length >= bound) {
        dropped++;
        return;
      }
      taken.push(r.id);
      pending.push(r.id);
    },
    flush: async () => {},
    holds: (id) => pending.includes(id),
    stats: () => ({ accepted: taken.length, written, failed: dropped, buffered: pending.length }),
    close: async () => {
      store.settle();
    },
  };
  return store;
}

/** An exporter whose export calls fail while `failing` holds, and that records what it exported. */
function fakeExporter(name: string, over: Partial<CaptureExporter> = {}) {
  const exported: string[] = [];
  const batches: number[] = [];
  const state = { failing: 0, calls: 0, shutdownAfter: -1, delayMs: 0 };
  const exporter: CaptureExporter = {
    name,
    async export(batch): Promise<ExportResult> {
      state.calls++;
      if (state.delayMs > 0) await new Promise((r) => setTimeout(r, state.delayMs));
      if (state.failing > 0) {
        state.failing--;
        return { code: 'failed', error: new Error('collector away') };
      }
      batches.push(batch.length);
      exported.push(...batch.map((r) => r.id));
      return { code: 'success' };
    },
    forceFlush: async () => {},
    shutdown: async () => {
      state.shutdownAfter = exported.length;
    },
    ...over,
  };
  return { exporter, exported, batches, state };
}

const journalLines = (dir: string) =>
  fs
    .readdirSync(dir)
    .filter((f) => f.endsWith('.jsonl'))
    .flatMap((f) => readSpoolFile(path.join(dir, f)));

describe('capture processor', () => {
  it('journals each record before the store and the exporters have it, and hands it to each in order', async () => {
    const dataDir = temps.make();
    const store = fakeStore();
    const seen: string[] = [];
    const a = fakeExporter('a', {
      takes: (r) => !r.id.startsWith(INGESTED_LOG_PREFIX),
      prepare: (r) => {
        r.traceId = 'a'.repeat(32);
        r.spanId = 'b'.repeat(16);
        // Prepared before the journal has the record.
        seen.push(`${r.id}:${journalLines(path.join(dataDir, SPOOL_FOLDER)).length}`);
      },
    });
    const b = fakeExporter('b');
    const processor = createCaptureProcessor({
      store,
      maxBuffered: 100,
      journal: { dataDir },
      exporters: [a.exporter, b.exporter],
    });
    const ids = ['log_1', 'log_2', `${INGESTED_LOG_PREFIX}3`, 'log_4', 'log_5'];
    for (const id of ids) processor.write(record(id));
    expect(store.taken).toEqual(ids);
    const lines = journalLines(path.join(dataDir, SPOOL_FOLDER));
    expect(lines.map((l) => [l.k, l.r.id])).toEqual(ids.map((id) => ['f', id]));
    // What the exporter completed is what the journal (and so the store) keeps.
    expect(lines[0]!.r.traceId).toBe('a'.repeat(32));
    expect(lines[2]!.r.traceId).toBeUndefined();
    expect(seen).toEqual(['log_1:0', 'log_2:1', 'log_4:3', 'log_5:4']);
    await processor.forceFlush();
    expect(a.exported).toEqual(['log_1', 'log_2', 'log_4', 'log_5']);
    expect(b.exported).toEqual(ids);
    // The first went at once; those written while it was in flight went together.
    expect(b.batches).toEqual([1, 4]);
    await processor.close();
    expect(processor.stats()).toMatchObject({ accepted: 5, written: 5, failed: 0, buffered: 0 });
    expect(fs.readdirSync(path.join(dataDir, SPOOL_FOLDER))).toEqual([]);
  });

  it('holds the batches an exporter fails and tries them again, losing and repeating none', async () => {
    const store = fakeStore();
    const warnings: string[] = [];
    const sink = fakeExporter('otlp');
    sink.state.failing = 3;
    const processor = createCaptureProcessor({
      store,
      maxBuffered: 100,
      exporters: [sink.exporter],
      warn: (m) => warnings.push(m),
    });
    const ids = Array.from({ length: 20 }, (_, i) => `log_${i}`);
    for (const id of ids.slice(0, 10)) processor.write(record(id));
    await waitFor(() => sink.state.calls >= 2, 5_000, 'a retry');
    for (const id of ids.slice(10)) processor.write(record(id));
    await waitFor(() => sink.exported.length === ids.length, 10_000, 'every record exported');
    expect(sink.exported).toEqual(ids);
    // The store is not held up by the exporter.
    expect(store.taken).toEqual(ids);
    expect(warnings).toEqual([
      'The otlp export failed (collector away): its records are held and tried again',
      'The otlp export takes records again',
    ]);
    expect(processor.exporterStats()).toEqual({ otlp: { exported: 20, dropped: 0, queued: 0 } });
    await processor.close();
  });

  it('exports what is queued at shutdown before shutting the exporter down, and closes the store', async () => {
    const store = fakeStore();
    const sink = fakeExporter('slow');
    sink.state.delayMs = 20;
    const processor = createCaptureProcessor({ store, maxBuffered: 100, exporters: [sink.exporter] });
    for (let i = 0; i < 50; i++) processor.write(record(`log_${i}`));
    expect(sink.exported.length).toBeLessThan(50);
    await processor.close();
    expect(sink.exported).toHaveLength(50);
    expect(sink.state.shutdownAfter).toBe(50);
    expect(store.stats()).toMatchObject({ written: 50, buffered: 0 });
    // Closed: nothing more is taken, and the caller is not told.
    processor.write(record('log_late'));
    expect(sink.exported).toHaveLength(50);
  });

  it('gives up a batch an exporter still fails at shutdown after a few tries, counted as dropped', async () => {
    const sink = fakeExporter('away');
    sink.state.failing = 1_000;
    const processor = createCaptureProcessor({
      store: fakeStore(),
      maxBuffered: 100,
      exporters: [sink.exporter],
    });
    for (let i = 0; i < 5; i++) processor.write(record(`log_${i}`));
    await processor.close();
    expect(sink.exported).toEqual([]);
    expect(processor.exporterStats().away).toMatchObject({ exported: 0, dropped: 5, queued: 0 });
  });

  it('keeps records past the store’s bound in the journal and hands them over again once it has room', async () => {
    const dataDir = temps.make();
    const store = fakeStore(4);
    const processor = createCaptureProcessor({ store, maxBuffered: 4, journal: { dataDir } });
    const ids = Array.from({ length: 10 }, (_, i) => `log_${i}`);
    for (const id of ids) processor.write(record(id));
    expect(store.taken).toEqual(ids.slice(0, 4));
    expect(processor.stats()).toMatchObject({ accepted: 10, failed: 0, buffered: 10, spilled: 6 });
    expect(processor.holds?.('log_9')).toBe(true);
    // The store settles what it has: the rest comes from the journal, in order, as it has room.
    while (store.taken.length < ids.length) {
      store.settle();
      const before = store.taken.length;
      await waitFor(() => store.taken.length > before, 5_000, 'a refill');
    }
    expect(store.taken).toEqual(ids);
    await processor.close();
    expect(processor.stats()).toMatchObject({
      accepted: 10,
      written: 10,
      failed: 0,
      buffered: 0,
      spilled: 0,
    });
    expect(fs.readdirSync(path.join(dataDir, SPOOL_FOLDER))).toEqual([]);
  });

  it('never throws at the caller: an exporter that throws leaves the record stored', async () => {
    const store = fakeStore();
    const processor = createCaptureProcessor({
      store,
      maxBuffered: 100,
      exporters: [
        {
          name: 'broken',
          takes: () => {
            throw new Error('bug');
          },
          export: async () => {
            throw new Error('bug');
          },
          forceFlush: async () => {},
          shutdown: async () => {},
        },
        {
          name: 'rejecting',
          prepare: () => {
            throw new Error('bug');
          },
          export: async () => {
            throw new Error('bug');
          },
          forceFlush: async () => {},
          shutdown: async () => {},
        },
      ],
    });
    expect(() => processor.write(record('log_1'))).not.toThrow();
    expect(store.taken).toEqual(['log_1']);
    await processor.close();
    expect(processor.exporterStats()).toMatchObject({
      broken: { exported: 0, dropped: 0 },
      rejecting: { exported: 0, dropped: 1 },
    });
  });

  it('replays a dead process’s journal to the store only, and removes its file', async () => {
    const fresh = await freshDatabase();
    const handle = await openDatabase(fresh.url);
    try {
      await handle.migrate();
      const dataDir = temps.make();
      const dir = path.join(dataDir, SPOOL_FOLDER);
      fs.mkdirSync(dir, { recursive: true });
      const line = (k: string, r: TaskLogRecord) => `${JSON.stringify({ k, r })}\n`;
      // A pid no process has (above the kernel's pid_max).
      const dead = path.join(dir, '2147483646.feedface.00000001.jsonl');
      fs.writeFileSync(
        dead,
        line('f', record('log_r1')) + line('b', record('log_r2')) + line('f', record('log_r3')),
      );
      const store = fakeStore();
      const sink = fakeExporter('otlp');
      const processor = createCaptureProcessor({
        store,
        maxBuffered: 100,
        journal: { dataDir },
        exporters: [sink.exporter],
      });
      expect(await processor.replay(handle.db)).toBe(3);
      expect(store.taken).toEqual(['log_r1', 'log_r2', 'log_r3']);
      expect(fs.existsSync(dead)).toBe(false);
      // Journaled again here before the dead file went: a kill now loses nothing.
      expect(journalLines(dir).map((l) => l.r.id)).toEqual(['log_r1', 'log_r2', 'log_r3']);
      await processor.close();
      expect(sink.exported).toEqual([]);
      expect(fs.readdirSync(dir)).toEqual([]);
    } finally {
      await handle.close();
      await fresh.drop();
    }
  });
});
