/**
 * One birth of a run: one function (`engine/store/birth.ts` `createRun`) writes every new `runs` row,
 * from a plan and an origin (API, eval, monitor), and the sides are stored once (in the plan).
 */
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunPlan } from '../../src/engine/plan.js';
import { createRun, type RunOrigin } from '../../src/engine/store/birth.js';
import { ApiError } from '../../src/shared/errors.js';
import { newId } from '../../src/shared/ids.js';
import { type Harness, startHarness } from '../helpers/harness.js';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const BIRTH = 'src/engine/store/birth.ts';
const TRANSITIONS = 'src/engine/store/transitions.ts';

/** An insert into `runs` (Kysely's builders, raw SQL), or a call of the queue transition that does it. */
const RUNS_INSERT = [
  /\b(insertInto|replaceInto|mergeInto)\(\s*['"`]runs['"`]\s*\)/,
  /\b(insert|replace)\s+(or\s+\w+\s+)?into\s+"?runs"?\b/i,
  /\bqueueRun\s*\(/,
];

function sourceFiles(dir: string): string[] {
  return fs.readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const full = path.join(dir, entry.name);
    if (entry.isDirectory()) return sourceFiles(full);
    return entry.name.endsWith('.ts') ? [full] : [];
  });
}

/** Files of src/ (migrations aside) that insert a `runs` row, directly or through `queueRun`. */
function runInserters(): string[] {
  return sourceFiles(path.join(ROOT, 'src'))
    .map((file) => path.relative(ROOT, file).split(path.sep).join('/'))
    .filter((file) => !file.startsWith('src/db/migrations/'))
    .filter((file) => RUNS_INSERT.some((p) => p.test(fs.readFileSync(path.join(ROOT, file), 'utf8'))))
    .sort();
}

describe('one function writes a new runs row', () => {
  it('only the birth calls the queue transition, which alone inserts into runs', () => {
    expect(runInserters()).toEqual([BIRTH, TRANSITIONS]);
    const birth = fs.readFileSync(path.join(ROOT, BIRTH), 'utf8');
    const transitions = fs.readFileSync(path.join(ROOT, TRANSITIONS), 'utf8');
    expect(RUNS_INSERT[0]!.test(birth)).toBe(false);
    expect(transitions.match(/insertInto\(\s*['"`]runs['"`]\s*\)/g)).toHaveLength(1);
  });

  it('recognises each way of inserting a run, so the scan above can fail', () => {
    for (const text of [
      "db.insertInto('runs').values(row)",
      'tx.insertInto( "runs" )',
      'sql`insert into runs (id) values (1)`',
      'INSERT OR IGNORE INTO "runs" VALUES (1)',
      'await queueRun(tx, row)',
    ])
      expect(
        RUNS_INSERT.some((p) => p.test(text)),
        text,
      ).toBe(true);
    for (const text of ["db.insertInto('run_samples')", "db.selectFrom('runs')", 'insert into run_launches'])
      expect(
        RUNS_INSERT.some((p) => p.test(text)),
        text,
      ).toBe(false);
  });
});

describe('createRun', () => {
  let h: Harness;
  let containerId: string;

  beforeAll(async () => {
    h = await startHarness({ env: { EVALGATE_SERVE_EXECUTES: '0' } });
    const res = await h.call('POST', '/v1/containers', { body: { label: 'births' } });
    expect(res.status).toBe(201);
    containerId = res.body.id;
  });
  afterAll(() => h?.close());

  const plan = (): RunPlan => ({
    projectId: h.admin.projectId,
    containerId,
    sides: {
      sample: { type: 'dataset', ref: 'ds_x', models: [], range: { start: 0, end: 3 } },
      ground_truth: { type: 'dataset', ref: 'ds_x', models: [], range: { start: 0, end: 3 } },
      baseline: null,
    },
    generated: null,
    launches: [{ index: 0, model: null }],
    evaluators: [],
  });
  const api = (key: string | null, hash: string): RunOrigin => ({
    kind: 'api',
    id: newId('run'),
    idempotency: { key, requestHash: hash },
    environment: 'main',
    name: 'born',
    metadata: { a: 1 },
    config: { asked: true },
    datasetIds: ['ds_x', 'ds_x'],
  });

  it('stores an API run queued, with its plan as the one form of its sides', async () => {
    const born = await createRun(h.services.db, plan(), api(null, 'h1'));
    expect(born.created).toBe(true);
    expect(born.run).toMatchObject({
      status: 'queued',
      project_id: h.admin.projectId,
      container_id: containerId,
      environment: 'main',
      name: 'born',
      dataset_ids: '["ds_x"]',
      metadata: '{"a":1}',
      config: '{"asked":true}',
      idempotency_key: null,
      request_hash: 'h1',
      monitor_id: null,
    });
    expect(JSON.parse(born.run.plan)).toEqual(plan());
    // The side columns are gone (migration 018): the plan is the one stored form.
    for (const column of ['sample', 'ground_truth', 'baseline']) expect(born.run).not.toHaveProperty(column);
  });

  it('answers a repeated key with the stored run, and another request under it with 409', async () => {
    const first = await createRun(h.services.db, plan(), api('k-1', 'same'));
    const again = await createRun(h.services.db, plan(), api('k-1', 'same'));
    expect(first.created).toBe(true);
    expect(again).toEqual({ created: false, run: first.run });
    const reused = await createRun(h.services.db, plan(), api('k-1', 'other')).catch((e: unknown) => e);
    expect(reused).toBeInstanceOf(ApiError);
    expect(reused).toMatchObject({ code: 'idempotency_key_reused', details: { run_id: first.run.id } });
  });

  it("starts a monitor's run at birth, with its launch, inside the caller's transaction", async () => {
    const id = newId('run');
    const monitorId = newId('mon');
    const born = await h.services.db.transaction().execute((tx) =>
      createRun(tx, plan(), {
        kind: 'monitor',
        id,
        monitorId,
        processId: 'proc-1',
        environment: 'main',
        name: null,
        metadata: null,
        config: { monitor: monitorId },
        datasetIds: [],
      }),
    );
    expect(born.created).toBe(true);
    expect(born.run).toMatchObject({ id, status: 'running', process_id: 'proc-1', monitor_id: monitorId });
    expect(JSON.parse(String(born.run.layout))).toEqual({
      positions: 0,
      expected: 0,
      offsets: { sample: 0, ground_truth: null, baseline: null },
    });
    const launches = await h.services.db
      .selectFrom('run_launches')
      .select(['launch_index', 'model'])
      .where('run_id', '=', id)
      .execute();
    expect(launches).toEqual([{ launch_index: 0, model: null }]);
  });
});
