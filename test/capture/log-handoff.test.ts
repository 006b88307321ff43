/**
 * The record hand-off on the hot path: the spool serialises a record once, and the threaded writer is
 * handed that same JSON text (no second serialisation, no object graph copied to the thread); the
 * thread parses it once and stores the task log as it was given, streamed answers assembled on its side.
 * Real spool files, the real writer thread, the harness's database (SQLite or PostgreSQL).
 */
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createCaptureProcessor } from '../../src/capture/processor.js';
import { SPOOL_FOLDER } from '../../src/capture/spool.js';
import { createThreadedLogWriter } from '../../src/capture/threaded-writer.js';
import type { TaskLogRecord } from '../../src/capture/types.js';
import { type Harness, startHarness } from '../helpers/harness.js';
import { tempDirs } from '../helpers/temp.js';

let h: Harness;
let containerId = '';
const temps = tempDirs('evalgate-handoff-');

beforeAll(async () => {
  h = await startHarness();
  containerId = (await h.call('POST', '/v1/containers', { body: { label: 'handoff' } })).body.id;
});
afterAll(async () => {
  await h?.close();
  temps.removeAll();
});

const SSE =
  'data: {"id":"c1","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"role":"assistant","content":"Hel"},"finish_reason":null}]}\n\n' +
  'data: {"id":"c1","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"content":"lo"},"finish_reason":"stop"}]}\n\n' +
  'data: [DONE]\n\n';

function record(id: string, over: Partial<TaskLogRecord> = {}): TaskLogRecord {
  return {
    id,
    projectId: h.admin.projectId,
    containerId,
    model: 'm',
    output: 'hello',
    requestText: '{"model":"m","messages":[{"role":"user","content":"Hi \\u00e9 \\"quoted\\""}]}',
    responseText: '{"choices":[{"message":{"role":"assistant","content":"hello"}}]}',
    usage: { prompt_tokens: 3, completion_tokens: 1, total_tokens: 4 },
    latencyMs: 1.5,
    cost: 0.00012,
    status: 'success',
    error: null,
    metadata: { route: 'chat', nested: { a: [1, 2, null] } },
    createdAt: new Date().toISOString(),
    ...over,
  };
}

describe('task log hand-off', () => {
  it('hands the threaded writer the spool’s own JSON text, and stores what was given', async () => {
    const dataDir = temps.make();
    const threaded = createThreadedLogWriter(h.database.url, { batchSize: 10, flushMs: 5 });
    const handed: string[] = [];
    let copied = 0;
    const inner = {
      ...threaded,
      write: (r: TaskLogRecord) => {
        copied++;
        threaded.write(r);
      },
      writeJson: (r: TaskLogRecord, json: string) => {
        handed.push(json);
        threaded.writeJson?.(r, json);
      },
    };
    const writer = createCaptureProcessor({ store: inner, maxBuffered: 1_000, journal: { dataDir } });
    const plain = record(`log_handoff_plain_${Date.now()}`);
    const streamed = record(`log_handoff_stream_${Date.now()}`, {
      output: null,
      responseText: undefined,
      responseSse: SSE,
      metadata: { route: 'chat', stream: true },
    });
    writer.write(plain);
    writer.write(streamed);

    // Each record went over as JSON text, the very text of its spool line.
    expect(copied).toBe(0);
    expect(handed.map((j) => JSON.parse(j).id)).toEqual([plain.id, streamed.id]);
    const spooled = fs
      .readdirSync(path.join(dataDir, SPOOL_FOLDER))
      .flatMap((f) => fs.readFileSync(path.join(dataDir, SPOOL_FOLDER, f), 'utf8').split('\n'))
      .filter(Boolean);
    expect(spooled).toEqual(handed.map((j) => `{"k":"f","r":${j}}`));
    expect(spooled.map((l) => JSON.parse(l))).toEqual([
      { k: 'f', r: JSON.parse(JSON.stringify(plain)) },
      { k: 'f', r: JSON.parse(JSON.stringify(streamed)) },
    ]);

    await writer.flush();
    await writer.close();
    expect(threaded.stats()).toMatchObject({ accepted: 2, written: 2, failed: 0 });
    const rows = await h.app.services.db
      .selectFrom('task_logs')
      .select(['id', 'output', 'metadata', 'cost', 'request'])
      .where('id', 'in', [plain.id, streamed.id])
      .execute();
    const byId = new Map(rows.map((r) => [r.id, r]));
    expect(byId.get(plain.id)?.output).toBe('hello');
    expect(JSON.parse(byId.get(plain.id)?.metadata ?? '{}')).toEqual(plain.metadata);
    expect(Number(byId.get(plain.id)?.cost)).toBeCloseTo(0.00012, 10);
    expect(byId.get(plain.id)?.request).toBe(plain.requestText);
    // The stream was assembled on the writer's side.
    expect(byId.get(streamed.id)?.output).toBe('Hello');
  });
});
