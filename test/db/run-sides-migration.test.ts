/**
 * Migration 018: a run's sides are stored once (in its plan), so the side columns go; runs stored before
 * stay readable, and an eval run stored before gets its name from its eval-run link. The database is
 * migrated to 017, given rows as the code before wrote them, then migrated to the latest and served.
 */
import { Migrator, sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openDatabase } from '../../src/db/database.js';
import { migrationProvider } from '../../src/db/migrations/index.js';
import { type FreshDatabase, freshDatabase } from '../helpers/databases.js';
import { type Harness, startHarness } from '../helpers/harness.js';

let fresh: FreshDatabase;
let h: Harness;

const NOW = '2026-01-02T03:04:05.000Z';
const range = { start: 0, end: 2 };
const plan = {
  projectId: 'prj_old',
  containerId: 'ctr_old',
  sides: {
    sample: { type: 'dataset', ref: 'ds_old', models: [], range },
    ground_truth: { type: 'container', ref: 'ctr_old', models: [], range },
    baseline: null,
  },
  generated: null,
  launches: [{ index: 0, model: null }],
  evaluators: [],
};

/** A run as the code before 018 stored it: the sides in their own columns too. */
function oldRun(id: string, name: string | null) {
  return {
    id,
    project_id: 'prj_old',
    container_id: 'ctr_old',
    status: 'completed',
    environment: 'main',
    evaluators: '[]',
    dataset_ids: '["ds_old"]',
    sample: JSON.stringify({ type: 'dataset', range: '0:2', dataset: 'ds_old' }),
    ground_truth: JSON.stringify({ type: 'container', range: '0:2', container: 'ctr_old' }),
    baseline: null,
    config: '{}',
    metadata: null,
    name,
    plan: JSON.stringify(plan),
    results: null,
    metrics: null,
    spend: 0,
    error: null,
    process_id: null,
    idempotency_key: null,
    request_hash: null,
    cancel_requested: 0,
    created_at: NOW,
    started_at: NOW,
    finished_at: NOW,
    error_at: null,
    updated_at: NOW,
  };
}

beforeAll(async () => {
  fresh = await freshDatabase();
  const handle = await openDatabase(fresh.url);
  try {
    const migrator = new Migrator({ db: handle.db, provider: migrationProvider });
    const { error } = await migrator.migrateTo('017_chunk_claim_order');
    if (error) throw error;
    // Raw SQL: the table types of the code are the latest, without the side columns.
    const insert = async (table: string, row: Record<string, unknown>) => {
      const cols = Object.keys(row);
      await sql`insert into ${sql.table(table)} (${sql.join(cols.map((c) => sql.ref(c)))})
        values (${sql.join(cols.map((c) => row[c]))})`.execute(handle.db);
    };
    await insert('organizations', { id: 'org_old', name: 'default', created_at: NOW });
    await insert('projects', { id: 'prj_old', organization_id: 'org_old', name: 'main', created_at: NOW });
    await insert('containers', {
      id: 'ctr_old',
      project_id: 'prj_old',
      label: 'old',
      description: null,
      metadata: '{}',
      created_at: NOW,
      updated_at: NOW,
    });
    await insert('runs', oldRun('run_old_eval', null));
    await insert('runs', oldRun('run_old_named', 'kept'));
    await insert('evals', {
      id: 'eval_old',
      project_id: 'prj_old',
      name: 'old eval',
      metadata: null,
      data_source_config: '{}',
      testing_criteria: '[]',
      created_at: NOW,
      updated_at: NOW,
    });
    for (const runId of ['run_old_eval', 'run_old_named']) {
      await insert('eval_runs', {
        run_id: runId,
        eval_id: 'eval_old',
        project_id: 'prj_old',
        name: `link name of ${runId}`,
        metadata: null,
        data_source: '{}',
        model: '',
        created_at: NOW,
      });
    }
  } finally {
    await handle.close();
  }
  h = await startHarness({ database: fresh, env: { EVALGATE_SERVE_EXECUTES: '0' } });
});
afterAll(() => h?.close());

describe('migration 018', () => {
  it('drops the side columns and keeps runs stored before readable, their sides from the plan', async () => {
    const columns = await h.services.db.introspection.getTables();
    const runs = columns.find((t) => t.name === 'runs');
    const names = runs?.columns.map((c) => c.name) ?? [];
    expect(names).toContain('plan');
    for (const gone of ['sample', 'ground_truth', 'baseline']) expect(names).not.toContain(gone);

    expect(h.admin.projectId).toBe('prj_old');
    const res = await h.call('GET', '/v1/evaluation/runs/run_old_named');
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({
      id: 'run_old_named',
      name: 'kept',
      status: 'completed',
      sample: { type: 'dataset', range: '0:2', dataset: 'ds_old' },
      ground_truth: { type: 'container', range: '0:2', container: 'ctr_old' },
      baseline: null,
    });
  });

  it("gives an eval run stored before its link's name, and leaves a name a run had", async () => {
    expect((await h.call('GET', '/v1/evaluation/runs/run_old_eval')).body.name).toBe(
      'link name of run_old_eval',
    );
    expect((await h.call('GET', '/v1/evaluation/runs/run_old_named')).body.name).toBe('kept');
    const listed = await h.call('GET', '/v1/evaluation/runs?name=link%20name%20of%20run_old_eval');
    expect(listed.body.data.map((r: { id: string }) => r.id)).toEqual(['run_old_eval']);
  });
});
