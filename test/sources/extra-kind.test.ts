import { hostname } from 'node:os';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createContainer } from '../../src/catalog/containers/service.js';
import { type DatabaseHandle, openDatabase } from '../../src/db/database.js';
import { Engine } from '../../src/engine/work.js';
import { createEvaluator } from '../../src/evaluators/service.js';
import { InlineExecutor } from '../../src/executor/inline.js';
import { InlineRunQueue } from '../../src/executor/inline-queue.js';
import type { ResolvedModel } from '../../src/llm/models/types.js';
import { createMemoryModelLimiter } from '../../src/ratelimit/model-limiter-memory.js';
import { runContext } from '../../src/runs/context.js';
import type { CreateRun } from '../../src/runs/schemas.js';
import { createRun, requireRun, toRun } from '../../src/runs/service.js';
import { BUILT_IN_SOURCES, createSourceRegistry } from '../../src/sources/registry.js';
import { createProject } from '../../src/tenancy/projects.js';
import { type MockUpstream, startMockUpstream } from '../fixtures/mock-upstream.js';
import { syntheticSource } from '../fixtures/synthetic-source.js';
import { type FreshDatabase, freshDatabase } from '../helpers/databases.js';
import { waitFor } from '../helpers/wait.js';
import { layerFor, modelAt } from '../llm/layer-helpers.js';

/**
 * A source kind defined in one file (test/fixtures/synthetic-source.ts) and listed in a registry runs end
 * to end: a run is created over it, the inline executor prepares and scores it through the engine, and
 * its results and samples are read back. Nothing but that registry knows the kind.
 */
describe('an extra source kind', () => {
  let fresh: FreshDatabase;
  let database: DatabaseHandle;
  let mock: MockUpstream;

  beforeAll(async () => {
    fresh = await freshDatabase();
    database = await openDatabase(fresh.url);
    await database.migrate();
    // The judge passes an output equal to the expected answer.
    mock = await startMockUpstream({
      reply: (req) => {
        const m = /OUT<<(.*)>> EXP<<(.*)>>/.exec(req.lastUserText);
        return { json: { score: m && m[1] === m[2] ? 1 : 0, reasoning: 'scripted' } };
      },
    });
  });
  afterAll(async () => {
    await mock?.close();
    await database?.close();
    await fresh?.drop();
  });

  it('is created, executed and scored like any other source', async () => {
    const { db } = database;
    const project = await createProject(db, 'extra-kind');
    const judge: ResolvedModel = modelAt(mock.baseUrl, { slug: 'judge' });
    const resolveModel = async (_projectId: string, ref: string) => {
      if (ref !== 'judge') throw new Error(`unknown model ${ref}`);
      return judge;
    };
    const queue = new InlineRunQueue(db);
    // The kind is known to this registry only: it is handed to the run rules and the engine.
    const sourceKinds = createSourceRegistry([...BUILT_IN_SOURCES, syntheticSource]);
    const runs = runContext({ db, environments: ['main'], queue, resolveModel, sandbox: null, sourceKinds });
    await createContainer(db, project.id, { label: 'app' });
    await createEvaluator(
      { db, python: 'python3', resolveModel, scorerKinds: runs.scorerKinds },
      project.id,
      {
        type: 'judge',
        name: 'match',
        model: 'judge',
        prompt: 'OUT<<{{output}}>> EXP<<{{expected}}>>',
        pass_threshold: 0.5,
      },
    );
    const principal = { projectId: project.id, permissions: ['*'] };
    const body = (sample: Record<string, unknown>) =>
      ({ container: 'app', evaluators: ['match'], sample }) as unknown as CreateRun;

    // The kind's own checks, reported as any validation error.
    await expect(
      createRun(runs, principal, body({ type: 'synthetic', count: 0 }), null),
    ).rejects.toMatchObject({
      code: 'validation_error',
    });
    await expect(
      createRun(runs, principal, body({ type: 'synthetic', count: 3, dataset: 'qa' }), null),
    ).rejects.toMatchObject({ code: 'validation_error' });

    const run = await createRun(runs, principal, body({ type: 'synthetic', count: 7, range: '0:7' }), null);
    expect(run.sample).toEqual({ type: 'synthetic', range: '0:7' });

    const engine = new Engine({
      db,
      ...sourceKinds.ports(db),
      scorerKinds: runs.scorerKinds,
      resolveModel,
      providers: layerFor(),
      limiter: createMemoryModelLimiter(),
      metrics: { upstreamCall: () => {}, positionsScored: () => {}, chunksInFlight: () => {} },
      modelConcurrency: 4,
      rateLimitWaitMs: 5_000,
      ledgerFlushMs: 50,
      warn: () => {},
      createCodeScorer: () => Promise.reject(new Error('no code evaluators here')),
      sandbox: async () => ({ available: false, reason: 'not needed' }),
      chunkSize: 3,
      scorerIdleMs: 1_000,
      workerId: 'extra-kind-worker',
    });
    const executor = new InlineExecutor(db, engine, queue, {
      workerId: 'extra-kind-worker',
      host: hostname(),
      environments: ['main'],
      concurrency: 2,
      leaseMs: 10_000,
      pollMs: 50,
      reconcileMs: 1_000,
      warn: () => {},
      skipLocked: database.capabilities.supportsSkipLocked,
    });
    await executor.start();
    try {
      await waitFor(
        async () => toRun(await requireRun(db, project.id, run.id), sourceKinds).status === 'completed',
        30_000,
        'the run over the synthetic source completed',
      );
    } finally {
      await executor.close();
      await engine.close();
      await queue.close();
    }

    const done = toRun(await requireRun(db, project.id, run.id), sourceKinds);
    const [evaluator] = Object.values(done.results?.per_model?.[0]?.per_eval ?? {});
    // Positions 0, 2, 4, 6 match their expected answer.
    expect(evaluator).toMatchObject({
      num_total: 7,
      num_scored: 7,
      num_passed: 4,
      num_failed: 3,
      num_errors: 0,
    });
    expect(mock.stats.requests).toBe(7);
    // Each sample row names the synthetic item it scored.
    const rows = await db
      .selectFrom('run_samples')
      .select(['position', 'item_id', 'passed'])
      .where('run_id', '=', run.id)
      .orderBy('position')
      .execute();
    expect(rows.map((r) => [Number(r.position), r.item_id, Number(r.passed)])).toEqual(
      [0, 1, 2, 3, 4, 5, 6].map((i) => [i, `syn-${i}`, i % 2 === 0 ? 1 : 0]),
    );
  }, 60_000);
});
