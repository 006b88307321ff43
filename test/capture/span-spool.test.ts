/**
 * The span spool under the capture processor's span lane: what the lane takes is on disk before `writeAll`
 * resolves (before the export is answered), a file is deleted once its spans are stored, the files a
 * stopped process left are taken again at the next start (what the conventions say of a span derived
 * again, a torn last line skipped), and a spool that cannot be written refuses the spans instead of
 * taking them in memory only.
 */
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { createSpanLane } from '../../src/capture/span-lane.js';
import { replaySpans, spoolJournal } from '../../src/capture/span-replay.js';
import { SPAN_SPOOL_FOLDER, SpanSpool } from '../../src/capture/span-spool.js';
import { type PendingSpan, toIngested } from '../../src/traces/span.js';
import { spanCodec } from '../../src/traces/span-codec.js';
import { tempDirs } from '../helpers/temp.js';
import { waitFor } from '../helpers/wait.js';

const temps = tempDirs('evalgate-span-spool-');
afterAll(() => temps.removeAll());

/** A model-call span (GenAI attributes) as OTLP ingest converts it. */
function pending(i: number): PendingSpan {
  const span = toIngested(
    {
      traceId: randomBytes(16),
      spanId: randomBytes(8),
      name: `chat m ${i}`,
      kind: 3,
      startTimeUnixNano: `${BigInt(Date.now()) * 1_000_000n}`,
      attributes: [
        { key: 'gen_ai.operation.name', value: { stringValue: 'chat' } },
        { key: 'gen_ai.request.model', value: { stringValue: 'm' } },
        { key: 'gen_ai.usage.input_tokens', value: { intValue: '3' } },
      ],
    },
    { 'service.name': 'spooled' },
    { name: 'test' },
  );
  if (typeof span === 'string') throw new Error(span);
  return { projectId: 'proj_1', containerId: i % 2 === 0 ? 'cont_1' : null, span };
}

/** A spool line as another process wrote it: the span without what its conventions say. */
function lineOf(span: PendingSpan['span'], projectId: string): string {
  const { facts: _, ...bare } = span;
  return `${JSON.stringify({ p: projectId, c: null, s: bare })}\n`;
}

/** The spool's files in `dataDir` and their lines. */
function spoolFiles(dataDir: string): { name: string; lines: string[] }[] {
  const dir = path.join(dataDir, SPAN_SPOOL_FOLDER);
  return fs
    .readdirSync(dir)
    .sort()
    .map((name) => ({
      name,
      lines: fs
        .readFileSync(path.join(dir, name), 'utf8')
        .split('\n')
        .filter((l) => l !== ''),
    }));
}

function writerOver(spool: SpanSpool, store: (batch: PendingSpan[]) => Promise<void>) {
  return createSpanLane<PendingSpan>({
    store,
    batchSize: 100,
    flushMs: 5,
    maxBuffered: 1_000,
    journal: spoolJournal(spool, spanCodec.encode),
  });
}

// The spool and the writer over an in-memory store: no database, so it runs once, in the SQLite project.
describe.skipIf(process.env.EVALGATE_TEST_DB === 'postgres')('the span spool', () => {
  it('has the spans on disk before they are taken, and deletes the file once they are stored', async () => {
    const dataDir = temps.make();
    const spool = new SpanSpool({ dataDir });
    let release = () => {};
    const gate = new Promise<void>((resolve) => {
      release = resolve;
    });
    const stored: PendingSpan[] = [];
    const writer = writerOver(spool, async (batch) => {
      await gate;
      stored.push(...batch);
    });
    const spans = Array.from({ length: 250 }, (_, i) => pending(i));
    expect(await writer.writeAll(spans, 1_000)).toBe(true);
    // Taken (the export would be answered now), not stored: every span is in the file already.
    expect(stored).toHaveLength(0);
    const lines = spoolFiles(dataDir).flatMap((f) => f.lines);
    expect(lines).toHaveLength(250);
    expect(lines.map((l) => JSON.parse(l).s.spanId)).toEqual(spans.map((s) => s.span.spanId));
    release();
    await writer.flush();
    expect(stored).toHaveLength(250);
    // Rotated (after a second) and deleted, all its spans being stored.
    await waitFor(() => spoolFiles(dataDir).length === 0, 5_000, 'the stored file to be deleted');
    await writer.close();
    spool.close();
    expect(spoolFiles(dataDir)).toEqual([]);
  });

  it('keeps the file of spans still held at close, and the next start takes them again', async () => {
    const dataDir = temps.make();
    const first = new SpanSpool({ dataDir });
    // The database is away: nothing is stored, the writer gives the spans up at its close.
    const down = Object.assign(new Error('connect ECONNREFUSED'), { code: 'ECONNREFUSED' });
    const writer = writerOver(first, () => Promise.reject(down));
    const spans = Array.from({ length: 30 }, (_, i) => pending(i));
    expect(await writer.writeAll(spans, 1_000)).toBe(true);
    await writer.close();
    first.close();
    const kept = spoolFiles(dataDir);
    expect(kept.flatMap((f) => f.lines)).toHaveLength(30);
    // Handed over: named as no live process's, so that a running process (not only the next start) takes
    // them, though this one lives on (as a cluster's primary does after closing its services).
    expect(kept.map((f) => f.name.split('.')[0])).toEqual(kept.map(() => '0'));
    // A file of a process killed mid-write: a dead process's name, its last line torn.
    const torn = `${kept[0]!.lines[0]!.slice(0, 40)}`;
    const dead = '4194303.deadbeef.00000001.jsonl';
    fs.writeFileSync(
      path.join(dataDir, SPAN_SPOOL_FOLDER, dead),
      `${lineOf(pending(99).span, 'proj_2')}${torn}`,
    );

    const second = new SpanSpool({ dataDir });
    const stored: PendingSpan[] = [];
    const next = writerOver(second, async (batch) => {
      stored.push(...batch);
    });
    expect(await replaySpans(second, next, spanCodec.decode, 1_000)).toBe(31);
    await next.flush();
    expect(stored).toHaveLength(31);
    // As they were taken the first time, what the conventions say of each derived again from the span.
    const byId = new Map(stored.map((p) => [p.span.spanId, p]));
    for (const s of spans) expect(byId.get(s.span.spanId)).toEqual(s);
    expect(stored.find((p) => p.projectId === 'proj_2')?.span.facts.call?.requestModel).toBe('m');
    // The files taken again are gone; the spans were spooled again here until stored.
    await waitFor(() => spoolFiles(dataDir).length === 0, 5_000, 'the replayed files to be deleted');
    await next.close();
    second.close();
  });

  it('gives back the files it finds no room for at once, for the next start to take', async () => {
    const dataDir = temps.make();
    const dir = path.join(dataDir, SPAN_SPOOL_FOLDER);
    fs.mkdirSync(dir, { recursive: true });
    // Five files of a process gone, of 30 spans each.
    const names = Array.from({ length: 5 }, (_, i) => `4194303.cafe${i}.0000000${i + 1}.jsonl`);
    for (const name of names) {
      const lines = Array.from({ length: 30 }, (_, i) => lineOf(pending(i).span, 'proj_1'));
      fs.writeFileSync(path.join(dir, name), lines.join(''));
    }
    const spool = new SpanSpool({ dataDir });
    // The database is away and the writer's bound is 10: the first file does not fit.
    const down = Object.assign(new Error('connect ECONNREFUSED'), { code: 'ECONNREFUSED' });
    const writer = createSpanLane<PendingSpan>({
      store: () => Promise.reject(down),
      batchSize: 100,
      flushMs: 5,
      maxBuffered: 10,
      journal: spoolJournal(spool, spanCodec.encode),
    });
    const t0 = Date.now();
    expect(await replaySpans(spool, writer, spanCodec.decode, 300)).toBe(0);
    // One wait, not one per file.
    expect(Date.now() - t0).toBeLessThan(1_200);
    // Every file is back under its own name (a stopped process's, claimable at the next start).
    const left = fs.readdirSync(dir).filter((n) => n.startsWith('4194303.'));
    expect(left.sort()).toEqual(names);
    await writer.close();
    spool.close();
  });

  it('refuses spans it cannot write down, and takes them again once it can', async () => {
    const dataDir = temps.make();
    const warnings: string[] = [];
    const spool = new SpanSpool({ dataDir, warn: (m) => warnings.push(m) });
    const stored: PendingSpan[] = [];
    const writer = writerOver(spool, async (batch) => {
      stored.push(...batch);
    });
    // The spool's folder replaced by a file: no file can be opened in it.
    const dir = path.join(dataDir, SPAN_SPOOL_FOLDER);
    fs.rmSync(dir, { recursive: true });
    fs.writeFileSync(dir, '');
    expect(await writer.writeAll([pending(1), pending(2)], 100)).toBe(false);
    expect(writer.write([pending(3)])).toBe(false);
    expect(writer.stats()).toMatchObject({ accepted: 0, buffered: 0 });
    expect(warnings.join('\n')).toMatch(/cannot be written.*answered 503/);
    fs.rmSync(dir);
    fs.mkdirSync(dir);
    expect(await writer.writeAll([pending(4)], 100)).toBe(true);
    await writer.flush();
    expect(stored).toHaveLength(1);
    expect(warnings.join('\n')).toMatch(/written again/);
    await writer.close();
    spool.close();
  });
});
