/**
 * The task log spool: what a process gone before left in its spool files is stored at the next start
 * (its finished records as they were, a streamed call with only its start as `interrupted`), once, and
 * the files are then removed; files of a live process are left alone; a torn last line is skipped.
 */
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createCaptureProcessor } from '../../src/capture/processor.js';
import { SPOOL_FOLDER } from '../../src/capture/spool.js';
import { INGESTED_LOG_PREFIX, type LogWriter, type TaskLogRecord } from '../../src/capture/types.js';
import { createLogWriter } from '../../src/capture/writer.js';
import { type Harness, startHarness } from '../helpers/harness.js';
import { tempDirs } from '../helpers/temp.js';

let h: Harness;
let containerId = '';
const temps = tempDirs('evalgate-spool-');

beforeAll(async () => {
  h = await startHarness();
  const created = await h.call('POST', '/v1/containers', { body: { label: 'spooled' } });
  containerId = created.body.id;
});
afterAll(async () => {
  await h?.close();
  temps.removeAll();
});

function record(id: string, over: Partial<TaskLogRecord> = {}): TaskLogRecord {
  return {
    id,
    projectId: h.admin.projectId,
    containerId,
    model: 'm',
    output: 'hello',
    requestText: '{"model":"m","messages":[{"role":"user","content":"Hi"}]}',
    responseText: '{"choices":[{"message":{"role":"assistant","content":"hello"}}]}',
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

const line = (k: 'b' | 'f', r: TaskLogRecord) => `${JSON.stringify({ k, r })}\n`;

async function rows(ids: string[]) {
  return await h.app.services.db
    .selectFrom('task_logs')
    .select(['id', 'status', 'error', 'output'])
    .where('id', 'in', ids)
    .orderBy('id')
    .execute();
}

describe('task log spool', () => {
  it('replays the files of a process that is gone, once, and removes them', async () => {
    const dataDir = temps.make();
    const dir = path.join(dataDir, SPOOL_FOLDER);
    fs.mkdirSync(dir, { recursive: true });
    // Already stored by the dead process before it died: not stored twice.
    const stored = record('log_spool_stored');
    const w0 = createLogWriter(h.app.services.db);
    w0.write(stored);
    await w0.close();
    // A pid no process has (above the kernel's pid_max).
    const dead = path.join(dir, '2147483646.deadbeef.00000001.jsonl');
    fs.writeFileSync(
      dead,
      line('f', record('log_spool_a')) +
        line(
          'b',
          record('log_spool_b', {
            status: 'error',
            output: null,
            error: { code: 'interrupted', message: 'x' },
          }),
        ) +
        line(
          'b',
          record('log_spool_c', {
            status: 'error',
            output: null,
            error: { code: 'interrupted', message: 'x' },
          }),
        ) +
        line('f', record('log_spool_c', { output: 'finished' })) +
        line('f', stored) +
        // Cut by the kill in the middle of a write.
        line('f', record('log_spool_torn')).slice(0, 40),
    );
    // pid 1 is alive: its file is not this process's to replay.
    const live = path.join(dir, '1.cafebabe.00000001.jsonl');
    fs.writeFileSync(live, line('f', record('log_spool_live')));

    const warnings: string[] = [];
    const writer = createCaptureProcessor({
      store: createLogWriter(h.app.services.db),
      maxBuffered: 100,
      journal: { dataDir, warn: (m) => warnings.push(m) },
    });
    expect(await writer.replay(h.app.services.db)).toBe(3);
    await writer.flush();
    const found = await rows([
      'log_spool_a',
      'log_spool_b',
      'log_spool_c',
      'log_spool_stored',
      'log_spool_live',
    ]);
    expect(found.map((r) => [r.id, r.status])).toEqual([
      ['log_spool_a', 'success'],
      ['log_spool_b', 'error'],
      ['log_spool_c', 'success'],
      ['log_spool_stored', 'success'],
    ]);
    expect(JSON.parse(found[1]!.error!)).toMatchObject({ code: 'interrupted' });
    expect(found[2]!.output).toBe('finished');
    expect(fs.existsSync(dead)).toBe(false);
    expect(fs.existsSync(live)).toBe(true);
    expect(warnings).toEqual(['Task logs spooled by a stopped process: 3 not yet stored, now written']);

    // Nothing left to replay: a second start stores nothing again.
    const again = createCaptureProcessor({
      store: createLogWriter(h.app.services.db),
      maxBuffered: 100,
      journal: { dataDir },
    });
    expect(await again.replay(h.app.services.db)).toBe(0);
    await again.close();
    await writer.close();
    expect(writer.stats()).toMatchObject({ accepted: 3, written: 3, failed: 0, buffered: 0 });
    // Its own files are gone once everything in them is stored; the live process's file stays.
    expect(fs.readdirSync(dir)).toEqual(['1.cafebabe.00000001.jsonl']);
  });

  it('keeps what a writer closed without storing (the database away), and stores it at the next start', async () => {
    const dataDir = temps.make();
    // A writer whose database never answers: it accepts, stores nothing, and gives up at close.
    let held = 0;
    let failed = 0;
    const away: LogWriter = {
      write: () => {
        held++;
      },
      flush: async () => {},
      stats: () => ({ accepted: held + failed, written: 0, failed, buffered: held }),
      close: async () => {
        failed += held;
        held = 0;
      },
    };
    const warnings: string[] = [];
    const first = createCaptureProcessor({
      store: away,
      maxBuffered: 100,
      journal: { dataDir, warn: (m) => warnings.push(m) },
    });
    first.write(record('log_spool_kept'));
    first.begin?.(
      record('log_spool_begun', {
        status: 'error',
        output: null,
        error: { code: 'interrupted', message: 'x' },
      }),
    );
    await first.close();
    expect(warnings).toEqual([
      expect.stringMatching(/^Task logs not yet stored are kept in .* the next start writes them$/),
    ]);

    const second = createCaptureProcessor({
      store: createLogWriter(h.app.services.db),
      maxBuffered: 100,
      journal: { dataDir },
    });
    expect(await second.replay(h.app.services.db)).toBe(2);
    await second.close();
    expect((await rows(['log_spool_begun', 'log_spool_kept'])).map((r) => [r.id, r.status])).toEqual([
      ['log_spool_begun', 'error'],
      ['log_spool_kept', 'success'],
    ]);
    expect(fs.readdirSync(path.join(dataDir, SPOOL_FOLDER))).toEqual([]);
  });

  it('gives a spooled gateway call its span, from a line of this version or of one whose records had none', async () => {
    const dataDir = temps.make();
    const dir = path.join(dataDir, SPOOL_FOLDER);
    fs.mkdirSync(dir, { recursive: true });
    const traceId = randomBytes(16).toString('hex');
    const spanIds = [0, 1, 2].map(() => randomBytes(8).toString('hex'));
    const at = Date.parse('2026-01-02T03:04:05.000Z');
    const ingested = `${INGESTED_LOG_PREFIX}${randomBytes(12).toString('hex')}`;
    const usage = { prompt_tokens: 5, completion_tokens: 2, total_tokens: 7 };
    fs.writeFileSync(
      path.join(dir, '2147483646.5ba0f11e.00000001.jsonl'),
      // Written before records carried their span: made from its route, with no verdicts.
      line(
        'f',
        record('log_spool_span_old', {
          traceId,
          spanId: spanIds[0],
          usage,
          metadata: { route: 'embeddings' },
        }),
      ) +
        line(
          'f',
          record('log_spool_span_new', {
            traceId,
            spanId: spanIds[1],
            usage,
            span: {
              operation: 'chat',
              guards: [{ guard: 'pii', stage: 'output', verdict: 'flagged', score: 0, at }],
            },
          }),
        ) +
        // A task log made of an ingested span: that span is stored already, none is written for it.
        line('f', record(ingested, { traceId, spanId: spanIds[2], usage, metadata: { route: 'chat' } })),
    );
    const writer = createCaptureProcessor({
      store: createLogWriter(h.app.services.db),
      maxBuffered: 100,
      journal: { dataDir },
    });
    expect(await writer.replay(h.app.services.db)).toBe(3);
    await writer.close();
    const spans = await h.app.services.db
      .selectFrom('spans')
      .select(['span_id', 'name', 'operation', 'events', 'model_call', 'task_log_id'])
      .where('trace_id', '=', traceId)
      .orderBy('task_log_id')
      .execute();
    expect(spans.map((r) => [r.task_log_id, r.name, r.operation])).toEqual([
      ['log_spool_span_new', 'chat m', 'chat'],
      ['log_spool_span_old', 'embeddings m', 'embeddings'],
    ]);
    for (const r of spans)
      expect(JSON.parse(r.model_call!).usage).toEqual({ input_tokens: 5, output_tokens: 2, total_tokens: 7 });
    expect(JSON.parse(spans[0]!.events)).toEqual([
      {
        name: 'evalgate.guard',
        time: '2026-01-02T03:04:05.000Z',
        attributes: {
          'evalgate.guard.name': 'pii',
          'evalgate.guard.stage': 'output',
          'evalgate.guard.verdict': 'flagged',
          'evalgate.guard.score': 0,
        },
      },
    ]);
    expect(JSON.parse(spans[1]!.events)).toEqual([]);
  });
});
