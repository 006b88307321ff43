/**
 * The capture processor's span lane, with a fake task-log store and a span sink in memory (no server):
 * the spans a dead process spooled are taken again by `replay` (after its task logs), spans still in the
 * lane are stored by `close` before the task-log store closes (a sink that records task logs still has
 * them taken), and spans the database keeps out at close stay in the spool for the next start.
 */
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { createCaptureProcessor } from '../../src/capture/processor.js';
import type { SpanCodec } from '../../src/capture/span-replay.js';
import { SPAN_SPOOL_FOLDER } from '../../src/capture/span-spool.js';
import { SPOOL_FOLDER } from '../../src/capture/spool.js';
import type { LogWriter, TaskLogRecord } from '../../src/capture/types.js';
import { openDatabase } from '../../src/db/database.js';
import { tempDirs } from '../helpers/temp.js';

const temps = tempDirs('evalgate-processor-spans-');
afterAll(() => temps.removeAll());

/** Spans as plain strings: the codec is the caller's (the trace service's derives facts again). */
const codec: SpanCodec<string> = {
  encode: (s) => `${JSON.stringify({ s })}\n`,
  decode(line) {
    try {
      const parsed: unknown = JSON.parse(line);
      const s = (parsed as { s?: unknown }).s;
      return typeof s === 'string' ? s : null;
    } catch {
      return null;
    }
  },
};

function record(id: string): TaskLogRecord {
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
  };
}

/** A task-log store that takes every record, settling them at close; `closed`: when it closed. */
function fakeStore() {
  const taken: string[] = [];
  const state = { closed: false, takenAfterClose: 0 };
  const store: LogWriter & { taken: string[]; state: typeof state } = {
    taken,
    state,
    write(r) {
      if (state.closed) state.takenAfterClose++;
      taken.push(r.id);
    },
    flush: async () => {},
    stats: () => ({
      accepted: taken.length,
      written: state.closed ? taken.length : 0,
      failed: 0,
      buffered: 0,
    }),
    close: async () => {
      state.closed = true;
    },
  };
  return store;
}

const spanOptions = (dataDir: string) => ({
  batchSize: 10,
  flushMs: 60_000,
  maxBuffered: 100,
  codec,
  spool: { dataDir },
  replayWaitMs: 1_000,
  replayEveryMs: 60_000,
});

const lines = (text: string[]) => text.map((s) => codec.encode(s)).join('');

// No database is stored to (the in-memory one only answers the task-log replay): run once, in SQLite's project.
describe.skipIf(process.env.EVALGATE_TEST_DB === 'postgres')('capture processor: the span lane', () => {
  it('takes again at replay the spans a dead process spooled, after its task logs', async () => {
    const dataDir = temps.make();
    const spanDir = path.join(dataDir, SPAN_SPOOL_FOLDER);
    const logDir = path.join(dataDir, SPOOL_FOLDER);
    fs.mkdirSync(spanDir, { recursive: true });
    fs.mkdirSync(logDir, { recursive: true });
    // Files of a process gone (a pid above the kernel's pid_max), the span file's last line torn by a kill.
    const deadSpans = path.join(spanDir, '2147483646.feedface.00000001.jsonl');
    fs.writeFileSync(deadSpans, `${lines(['s1', 's2', 's3'])}{"s":"s4`);
    fs.writeFileSync(
      path.join(logDir, '2147483646.feedface.00000001.jsonl'),
      `${JSON.stringify({ k: 'f', r: record('log_1') })}\n`,
    );
    const handle = await openDatabase('sqlite::memory:');
    await handle.migrate();
    const store = fakeStore();
    const stored: string[] = [];
    // What the task-log store had when each span batch was stored: the task logs are replayed first.
    const logsSeen: number[] = [];
    const processor = createCaptureProcessor({
      store,
      maxBuffered: 100,
      journal: { dataDir },
      spans: spanOptions(dataDir),
    });
    processor.spans.attach(async (batch) => {
      logsSeen.push(store.taken.length);
      stored.push(...batch);
    });
    try {
      expect(await processor.replay(handle.db)).toBe(1);
      expect(processor.spans.stats()).toMatchObject({ accepted: 3, buffered: 3 });
      // Spooled again here before the dead file went: a kill now loses nothing.
      expect(fs.existsSync(deadSpans)).toBe(false);
      const again = fs.readdirSync(spanDir).flatMap((f) => fs.readFileSync(path.join(spanDir, f), 'utf8'));
      expect(again.join('')).toBe(lines(['s1', 's2', 's3']));
      await processor.forceFlush();
      expect(stored).toEqual(['s1', 's2', 's3']);
      expect(logsSeen).toEqual([1]);
    } finally {
      await processor.close();
      await handle.close();
    }
    expect(fs.readdirSync(spanDir)).toEqual([]);
  });

  it('stores what the span lane holds at close, before the task-log store closes', async () => {
    const dataDir = temps.make();
    const store = fakeStore();
    const stored: string[] = [];
    const processor = createCaptureProcessor({ store, maxBuffered: 100, spans: spanOptions(dataDir) });
    // A sink that records a task log per span, as the trace service does for model-call spans.
    processor.spans.attach(async (batch) => {
      stored.push(...batch);
      for (const s of batch) processor.write(record(`log_${s}`));
    });
    const spans = Array.from({ length: 25 }, (_, i) => `s${i}`);
    expect(await processor.spans.writeAll(spans, 1_000)).toBe(true);
    // 20 in two full batches, 5 waiting for a flush a minute away.
    await processor.spans.flush();
    expect(processor.spans.write(['last'])).toBe(true);
    expect(stored).toHaveLength(25);
    await processor.close();
    expect(stored).toEqual([...spans, 'last']);
    expect(processor.spans.stats()).toEqual({ accepted: 26, written: 26, failed: 0, buffered: 0 });
    expect(store.taken).toEqual([...spans, 'last'].map((s) => `log_${s}`));
    expect(store.state.takenAfterClose).toBe(0);
    // Closed: the lane takes no more, and its spool files are gone (every span stored).
    expect(processor.spans.write(['late'])).toBe(false);
    expect(fs.readdirSync(path.join(dataDir, SPAN_SPOOL_FOLDER))).toEqual([]);
  });

  it('keeps in the spool the spans the database keeps out at close, for the next start', async () => {
    const dataDir = temps.make();
    const down = Object.assign(new Error('connect ECONNREFUSED'), { code: 'ECONNREFUSED' });
    const processor = createCaptureProcessor({
      store: fakeStore(),
      maxBuffered: 100,
      spans: spanOptions(dataDir),
    });
    processor.spans.attach(() => Promise.reject(down));
    expect(processor.spans.write(['a', 'b'])).toBe(true);
    await processor.close();
    expect(processor.spans.stats()).toMatchObject({ accepted: 2, written: 0, failed: 2, buffered: 0 });
    const dir = path.join(dataDir, SPAN_SPOOL_FOLDER);
    const kept = fs.readdirSync(dir);
    // Handed over (named as no live process's) for whichever process looks next.
    expect(kept.map((f) => f.split('.')[0])).toEqual(['0']);
    expect(fs.readFileSync(path.join(dir, kept[0]!), 'utf8')).toBe(lines(['a', 'b']));
  });
});
