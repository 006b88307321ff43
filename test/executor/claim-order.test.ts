import { sql } from 'kysely';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { type DatabaseHandle, openDatabase } from '../../src/db/database.js';
import { claimChunk } from '../../src/executor/leases.js';
import type { RunStatus } from '../../src/shared/run-status.js';
import { type FreshDatabase, freshDatabase } from '../helpers/databases.js';

let fresh: FreshDatabase;
let handle: DatabaseHandle;

const at = (s: number) => new Date(Date.UTC(2026, 0, 1, 0, 0, s)).toISOString();

async function addRun(
  id: string,
  createdAt: string,
  status: RunStatus = 'running',
  cancel = 0,
): Promise<void> {
  await handle.db
    .insertInto('runs')
    .values({
      id,
      project_id: 'prj',
      container_id: 'ctr',
      status,
      environment: 'main',
      evaluators: '[]',
      dataset_ids: '[]',
      config: '{}',
      plan: '{}',
      cancel_requested: cancel,
      created_at: createdAt,
      updated_at: createdAt,
    })
    .execute();
}

async function addChunks(runId: string, chunks: number, launches: number, environment = 'main') {
  const rows = [];
  for (let chunk = 0; chunk < chunks; chunk++) {
    for (let launch = 0; launch < launches; launch++) {
      rows.push({
        run_id: runId,
        launch_index: launch,
        chunk_index: chunk,
        from_position: chunk * 10,
        to_position: chunk * 10 + 10,
        environment,
        status: 'pending',
        owner: null,
        lease_expires_at: null,
        attempts: 0,
        updated_at: at(0),
      });
    }
  }
  await handle.db.insertInto('run_chunks').values(rows).execute();
}

const set = (runId: string, launch: number, chunk: number, change: string) =>
  sql`update run_chunks set ${sql.raw(change)} where run_id = ${runId} and launch_index = ${launch}
    and chunk_index = ${chunk}`.execute(handle.db);

beforeEach(async () => {
  fresh = await freshDatabase();
  handle = await openDatabase(fresh.url);
  await handle.migrate();
  const db = handle.db;
  await db
    .insertInto('organizations')
    .values({ id: 'org', name: 'org', created_at: at(0) })
    .execute();
  await db
    .insertInto('projects')
    .values({ id: 'prj', organization_id: 'org', name: 'prj', created_at: at(0) })
    .execute();
  await db
    .insertInto('containers')
    .values({
      id: 'ctr',
      project_id: 'prj',
      label: 'c',
      metadata: '{}',
      created_at: at(0),
      updated_at: at(0),
    })
    .execute();
});

afterEach(async () => {
  await handle.close();
  await fresh.drop();
});

describe('chunk claims', () => {
  it('take the oldest running run first, chunk by chunk with launches interleaved, skipping what is not free', async () => {
    // Created in another order than their age; a cancelled run, an ended run and another environment
    // are never claimed from.
    await addRun('run_new', at(30));
    await addRun('run_old', at(10));
    await addRun('run_cancelled', at(1), 'running', 1);
    await addRun('run_ended', at(2), 'completed');
    await addRun('run_elsewhere', at(3));
    await addChunks('run_new', 2, 1);
    await addChunks('run_old', 3, 2);
    await addChunks('run_cancelled', 2, 1);
    await addChunks('run_ended', 2, 1);
    await addChunks('run_elsewhere', 2, 1, 'other');
    const future = Date.now() + 600_000;
    await set('run_old', 0, 0, `status = 'done'`);
    await set('run_old', 1, 1, `lease_expires_at = ${future}`); // held by a live lease
    await set('run_old', 0, 2, `lease_expires_at = ${Date.now() - 1000}, owner = 'dead'`); // expired
    const claims: string[] = [];
    for (;;) {
      const c = await claimChunk(handle.db, 'me', ['main'], 60_000, {
        skipLocked: handle.capabilities.supportsSkipLocked,
        probe: claims.length === 0,
      });
      if (!c) break;
      expect(c.owner).toBe('me');
      expect(Number(c.lease_expires_at)).toBeGreaterThan(Date.now());
      claims.push(`${c.run_id}:${c.chunk_index}:${c.launch_index}`);
    }
    expect(claims).toEqual([
      'run_old:0:1',
      'run_old:1:0',
      'run_old:2:0',
      'run_old:2:1',
      'run_new:0:0',
      'run_new:1:0',
    ]);
    // The lease held by someone else is still theirs; the expired one was taken over.
    const held = await handle.db
      .selectFrom('run_chunks')
      .select(['owner', 'attempts'])
      .where('run_id', '=', 'run_old')
      .where('launch_index', '=', 1)
      .where('chunk_index', '=', 1)
      .executeTakeFirstOrThrow();
    expect(held.owner).toBeNull();
    expect(Number(held.attempts)).toBe(0);
  });
});
