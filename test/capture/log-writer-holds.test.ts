import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { HeldIds } from '../../src/capture/held-ids.js';
import { createThreadedLogWriter } from '../../src/capture/threaded-writer.js';
import type { LogWriter, TaskLogRecord } from '../../src/capture/types.js';
import { createLogWriter } from '../../src/capture/writer.js';
import { insertContainer } from '../../src/catalog/containers/repository.js';
import { type DatabaseHandle, openDatabase } from '../../src/db/database.js';
import { newId, nowIso } from '../../src/shared/ids.js';
import { ensureProject } from '../../src/tenancy/projects.js';
import { type FreshDatabase, freshDatabase } from '../helpers/databases.js';

let fresh: FreshDatabase;
let handle: DatabaseHandle;
let projectId: string;
let containerId: string;

beforeEach(async () => {
  fresh = await freshDatabase();
  handle = await openDatabase(fresh.url);
  await handle.migrate();
  projectId = (await ensureProject(handle.db, 'holds')).id;
  containerId = newId('ctr');
  const now = nowIso();
  await insertContainer(handle.db, {
    id: containerId,
    project_id: projectId,
    label: 'c',
    description: null,
    metadata: '{}',
    created_at: now,
    updated_at: now,
  });
});
afterEach(async () => {
  await handle.close();
  await fresh.drop();
});

const record = (): TaskLogRecord => ({
  id: newId('log'),
  projectId,
  containerId,
  model: 'openai/gpt-4o-mini',
  output: 'answer',
  request: { messages: [{ role: 'user', content: 'question' }] },
  usage: null,
  latencyMs: 1,
  cost: 0,
  status: 'success',
  error: null,
  metadata: {},
  createdAt: nowIso(),
});

const stored = async (id: string) =>
  (await handle.db.selectFrom('task_logs').select('id').where('id', '=', id).executeTakeFirst()) !==
  undefined;

describe('HeldIds', () => {
  it('keeps the ids of the last records held, forgetting older ones as the writer settles them', () => {
    const held = new HeldIds();
    for (const id of ['a', 'b', 'c', 'b']) held.accepted(id);
    expect(held.holds('a', 4)).toBe(true);
    expect(held.holds('a', 3)).toBe(false);
    expect(held.holds('b', 1)).toBe(true);
    expect(held.holds('c', 1)).toBe(false);
    expect(held.holds('b', 0)).toBe(false);
    for (let i = 0; i < 5000; i++) held.accepted(`x${i}`);
    expect(held.holds('x4999', 1)).toBe(true);
    expect(held.holds('x4998', 1)).toBe(false);
  });
});

describe.each([
  ['in-process', () => createLogWriter(handle.db, { flushMs: 60_000 })],
  ['threaded', () => createThreadedLogWriter(fresh.url, { flushMs: 60_000 })],
] as const)('the %s log writer tells which records it still holds', (_name, make: () => LogWriter) => {
  it('holds an accepted record until it is written, and never an id it was not given', async () => {
    const writer = make();
    try {
      const first = record();
      const second = record();
      writer.write(first);
      writer.write(second);
      expect(writer.holds?.(first.id)).toBe(true);
      expect(writer.holds?.(second.id)).toBe(true);
      expect(writer.holds?.(newId('log'))).toBe(false);
      expect(await stored(first.id)).toBe(false);
      await writer.flush();
      expect(await stored(first.id)).toBe(true);
      expect(writer.holds?.(first.id)).toBe(false);
      expect(writer.holds?.(second.id)).toBe(false);
    } finally {
      await writer.close();
    }
  });
});
