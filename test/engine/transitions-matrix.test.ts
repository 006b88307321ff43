import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createContainer } from '../../src/catalog/containers/service.js';
import { type DatabaseHandle, openDatabase } from '../../src/db/database.js';
import {
  abandonRun,
  cancelQueued,
  failRun,
  finishRun,
  queueRun,
  renameRun,
  requestCancel,
  startRun,
} from '../../src/engine/store/transitions.js';
import type { RunQueue } from '../../src/executor/run-queue.js';
import { cancelRun, runContext } from '../../src/runs/service.js';
import { ApiError } from '../../src/shared/errors.js';
import { newId } from '../../src/shared/ids.js';
import { RUN_STATUSES, type RunStatus } from '../../src/shared/run-status.js';
import { createProject } from '../../src/tenancy/projects.js';
import { bareRunRow } from '../helpers/run-rows.js';

// Every transition of a run's lifecycle from every status, through the transition functions alone, on an
// in-memory SQLite database (no server, no HTTP):
//
//   queued ─start─→ running ─finish─→ completed | cancelled
//     │                └─────fail───→ error
//     ├─finish─→ completed | cancelled, ─fail─→ error (a run that ends before it starts)
//     └─cancel─→ cancelled

let database: DatabaseHandle;
let projectId: string;
let containerId: string;

beforeAll(async () => {
  database = await openDatabase('sqlite::memory:');
  await database.migrate();
  projectId = (await createProject(database.db, 'transitions')).id;
  containerId = (await createContainer(database.db, projectId, { label: 'c' })).id;
});
afterAll(() => database?.close());

const db = () => database.db;
const outcome = { results: { per_model: [] }, metrics: { progress: { done: 0 } }, spend: 0.25 };
const error = { code: 'rate_limited', message: 'gave up' };

async function queued(): Promise<string> {
  const row = bareRunRow(projectId, containerId, { plan: 'null' });
  expect(await queueRun(db(), row)).toBe(true);
  return row.id;
}

const start = (id: string) => startRun(db(), id, { startedAt: null, totalPositions: 3, processId: 'p' });

/** A run in `status`, reached through the transitions only. */
async function runIn(status: RunStatus): Promise<string> {
  const id = await queued();
  if (status === 'queued') return id;
  if (status === 'cancelled') {
    expect(await cancelQueued(db(), id)).toBe(true);
    return id;
  }
  expect(await start(id)).toBe(true);
  if (status === 'completed') expect(await finishRun(db(), id, 'completed', outcome)).toBe(true);
  if (status === 'error') expect(await failRun(db(), id, error, outcome)).toBe(true);
  return id;
}

const row = (id: string) =>
  db().selectFrom('runs').selectAll().where('id', '=', id).executeTakeFirstOrThrow();

type Move = 'start' | 'cancel' | 'complete' | 'cancel_running' | 'fail';
const MOVES: Record<Move, { to: RunStatus; apply(id: string): Promise<boolean> }> = {
  start: { to: 'running', apply: start },
  cancel: { to: 'cancelled', apply: (id) => cancelQueued(db(), id) },
  complete: { to: 'completed', apply: (id) => finishRun(db(), id, 'completed', outcome) },
  cancel_running: { to: 'cancelled', apply: (id) => finishRun(db(), id, 'cancelled', outcome) },
  fail: { to: 'error', apply: (id) => failRun(db(), id, error, outcome) },
};

/** The lifecycle, written out: the statuses each move is allowed from; from any other it is refused. */
const ALLOWED: Record<Move, RunStatus[]> = {
  start: ['queued'],
  cancel: ['queued'],
  complete: ['queued', 'running'],
  cancel_running: ['queued', 'running'],
  fail: ['queued', 'running'],
};

describe('run transitions, every move from every status', () => {
  for (const from of RUN_STATUSES) {
    for (const move of Object.keys(MOVES) as Move[]) {
      const allowed = ALLOWED[move].includes(from);
      it(`${move} from ${from}: ${allowed ? `moves to ${MOVES[move].to}` : 'refused, nothing changes'}`, async () => {
        const id = await runIn(from);
        const before = await row(id);
        expect(before.status).toBe(from);
        expect(await MOVES[move].apply(id)).toBe(allowed);
        const after = await row(id);
        if (!allowed) {
          expect(after).toEqual(before);
          return;
        }
        expect(after.status).toBe(MOVES[move].to);
        if (move === 'start') {
          expect([after.started_at !== null, Number(after.total_positions), after.process_id]).toEqual([
            true,
            3,
            'p',
          ]);
          expect(after.finished_at).toBeNull();
          return;
        }
        expect(after.finished_at).not.toBeNull();
        if (move === 'fail') {
          expect(JSON.parse(after.error ?? 'null')).toEqual(error);
          expect(after.error_at).not.toBeNull();
        } else {
          expect([after.error, after.error_at]).toEqual([null, null]);
        }
        if (move !== 'cancel') {
          expect(JSON.parse(after.results ?? 'null')).toEqual(outcome.results);
          expect(Number(after.spend)).toBe(0.25);
        }
      });
    }
  }

  it('never stores a second run under a taken idempotency key', async () => {
    const id = await queued();
    const taken = { ...(await row(id)), id: newId('run'), idempotency_key: 'k1' };
    await db().updateTable('runs').set({ idempotency_key: 'k1' }).where('id', '=', id).execute();
    const { status: _status, ...rest } = taken;
    expect(await queueRun(db(), rest)).toBe(false);
  });

  it('renames, flags for cancellation and records an abandonment in any status, leaving the status', async () => {
    for (const status of RUN_STATUSES) {
      const id = await runIn(status);
      await renameRun(db(), id, `named ${status}`);
      await requestCancel(db(), id);
      await abandonRun(db(), id, error);
      const after = await row(id);
      expect([after.status, after.name, after.cancel_requested]).toEqual([status, `named ${status}`, 1]);
      expect(JSON.parse(after.abandoned ?? 'null')).toEqual(error);
    }
  });
});

describe('cancelling a run (runs/service.ts) over a fake queue', () => {
  /** The executors' side: a cancelled running run is ended by its executor, as the queue's listener does. */
  const cancelled: string[] = [];
  const queue = {
    cancel: async (id: string) => {
      cancelled.push(id);
      await finishRun(db(), id, 'cancelled', outcome);
    },
  } as Partial<RunQueue> as RunQueue;
  const ctx = () =>
    runContext({
      db: db(),
      environments: ['main'],
      queue,
      resolveModel: async () => {
        throw new Error('no models here');
      },
      sandbox: null,
    });

  it('cancels a queued run at once, and a running one through its executors', async () => {
    for (const status of ['queued', 'running'] as const) {
      const id = await runIn(status);
      const run = await cancelRun(ctx(), projectId, id);
      expect(run.status).toBe('cancelled');
      expect(cancelled).toContain(id);
      expect((await row(id)).cancel_requested).toBe(1);
    }
  });

  it('refuses to cancel an ended run with a conflict, and changes nothing', async () => {
    for (const status of ['completed', 'error', 'cancelled'] as const) {
      const id = await runIn(status);
      const before = await row(id);
      const err = await cancelRun(ctx(), projectId, id).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(ApiError);
      expect([(err as ApiError).status, (err as ApiError).details]).toEqual([409, { status }]);
      expect(await row(id)).toEqual(before);
    }
  });
});
