import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  addUsage,
  cancelQueued,
  failRun,
  finishRun,
  queueRun,
  requestCancel,
  startRun,
} from '../../src/engine/store/transitions.js';
import { type Harness, startHarness } from '../helpers/harness.js';
import { bareRunRow } from '../helpers/run-rows.js';
import { writersOf, writesOf } from '../helpers/table-writers.js';

const TRANSITIONS = 'src/engine/store/transitions.ts';

/** Statements that write the `runs` table: Kysely's builders and raw SQL, in any quoting or case. */
const RUNS_WRITE = writesOf('runs');

describe('a run has one owner', () => {
  it('writes the runs table (status, counters, flags) only in the transitions module', () => {
    expect(writersOf('runs')).toEqual([TRANSITIONS]);
  });

  it('recognises each way of writing the table, so the scan above can fail', () => {
    const snippets = [
      "db.updateTable('runs').set({ status: 'error' })",
      'db.insertInto("runs").values(row)',
      'sql`update runs set status = $1`',
      'UPDATE "runs" SET status = 1',
      "db.deleteFrom('runs')",
    ];
    for (const text of snippets)
      expect(
        RUNS_WRITE.some((p) => p.test(text)),
        text,
      ).toBe(true);
    for (const text of ["db.selectFrom('runs')", "db.updateTable('run_chunks')", 'update run_samples set'])
      expect(
        RUNS_WRITE.some((p) => p.test(text)),
        text,
      ).toBe(false);
  });
});

describe('run transitions', () => {
  let h: Harness;
  let containerId: string;

  beforeAll(async () => {
    h = await startHarness({ env: { EVALGATE_SERVE_EXECUTES: '0' } });
    const res = await h.call<{ id: string }>('POST', '/v1/containers', { body: { label: 'transitions' } });
    expect(res.status).toBe(201);
    containerId = res.body.id;
  });
  afterAll(() => h?.close());

  async function queued(): Promise<string> {
    const row = bareRunRow(h.admin.projectId, containerId);
    expect(await queueRun(h.services.db, row)).toBe(true);
    return row.id;
  }

  const row = (id: string) =>
    h.services.db.selectFrom('runs').selectAll().where('id', '=', id).executeTakeFirstOrThrow();
  const outcome = { results: { per_model: [] }, metrics: { progress: { done: 0 } }, spend: 0.5 };

  it('moves queued → running → completed, each step only from the state it names', async () => {
    const id = await queued();
    expect((await row(id)).status).toBe('queued');
    expect(await startRun(h.services.db, id, { startedAt: null, totalPositions: 7, processId: 'p' })).toBe(
      true,
    );
    expect(await startRun(h.services.db, id, { startedAt: null, totalPositions: 9, processId: 'q' })).toBe(
      false,
    );
    expect(await cancelQueued(h.services.db, id)).toBe(false);
    const running = await row(id);
    expect([running.status, Number(running.total_positions), running.process_id]).toEqual([
      'running',
      7,
      'p',
    ]);
    expect(await finishRun(h.services.db, id, 'completed', outcome)).toBe(true);
    // Only the first caller ends a run.
    expect(await failRun(h.services.db, id, { code: 'internal_error', message: 'late' }, outcome)).toBe(
      false,
    );
    const done = await row(id);
    expect(done.status).toBe('completed');
    expect(done.finished_at).not.toBeNull();
    expect(done.error).toBeNull();
    expect(JSON.parse(done.results ?? 'null')).toEqual(outcome.results);
    expect(Number(done.spend)).toBe(0.5);
  });

  it('cancels a queued run at once, and records the error of a failed one', async () => {
    const cancelled = await queued();
    await requestCancel(h.services.db, cancelled);
    expect(await cancelQueued(h.services.db, cancelled)).toBe(true);
    expect(
      await startRun(h.services.db, cancelled, { startedAt: null, totalPositions: 1, processId: 'p' }),
    ).toBe(false);
    const c = await row(cancelled);
    expect([c.status, c.cancel_requested]).toEqual(['cancelled', 1]);
    expect(c.finished_at).not.toBeNull();

    const failed = await queued();
    await startRun(h.services.db, failed, { startedAt: null, totalPositions: 1, processId: 'p' });
    await addUsage(h.services.db, failed, {
      judge: { calls: 2, unpriced: 1, cost: 0.25, prompt: 10, completion: 4 },
      generation: { calls: 0, unpriced: 0, cost: 0, prompt: 0, completion: 0 },
    });
    const error = { code: 'rate_limited', message: 'gave up' };
    expect(await failRun(h.services.db, failed, error, outcome)).toBe(true);
    expect(await finishRun(h.services.db, failed, 'cancelled', outcome)).toBe(false);
    const f = await row(failed);
    expect(f.status).toBe('error');
    expect(JSON.parse(f.error ?? 'null')).toEqual(error);
    expect(f.error_at).not.toBeNull();
    expect([Number(f.judge_calls), Number(f.judge_unpriced_calls), Number(f.judge_prompt_tokens)]).toEqual([
      2, 1, 10,
    ]);
  });
});
