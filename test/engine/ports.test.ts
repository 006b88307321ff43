import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createContainer } from '../../src/catalog/containers/service.js';
import { countDatasetItems, readDatasetItems } from '../../src/catalog/datasets/items.js';
import { createDataset } from '../../src/catalog/datasets/service.js';
import { type DatabaseHandle, openDatabase } from '../../src/db/database.js';
import type { ReadSide } from '../../src/engine/plan.js';
import { loadRun } from '../../src/engine/store/runs.js';
import { type ChunkRef, Engine, type EngineDeps } from '../../src/engine/work.js';
import { createEvaluator } from '../../src/evaluators/service.js';
import { InlineRunQueue } from '../../src/executor/inline-queue.js';
import type { ResolvedModel } from '../../src/llm/models/types.js';
import type { EngineMetrics } from '../../src/observability/types.js';
import { createMemoryModelLimiter } from '../../src/ratelimit/model-limiter-memory.js';
import { runContext } from '../../src/runs/context.js';
import { createRun, requireRun, toRun } from '../../src/runs/service.js';
import { createProject } from '../../src/tenancy/projects.js';
import { type MockUpstream, startMockUpstream } from '../fixtures/mock-upstream.js';
import { type FreshDatabase, freshDatabase } from '../helpers/databases.js';
import { layerFor, modelAt } from '../llm/layer-helpers.js';

/**
 * The engine and the run rules built from their ports alone: no server, no Fastify, no createServices.
 * Only the database and the upstream are real (the upstream is the mock provider on loopback).
 */
describe('engine and run context from their ports', () => {
  let fresh: FreshDatabase;
  let database: DatabaseHandle;
  let mock: MockUpstream;
  const calls: { model: string; kind: string; outcome: string }[] = [];
  let scored = 0;

  beforeAll(async () => {
    fresh = await freshDatabase();
    database = await openDatabase(fresh.url);
    await database.migrate();
    // The judge scores 1 when the output mentions "good", else 0.
    mock = await startMockUpstream({
      reply: (req) => ({ json: { score: req.lastUserText.includes('good') ? 1 : 0, reasoning: 'scripted' } }),
    });
  });
  afterAll(async () => {
    await mock?.close();
    await database?.close();
    await fresh?.drop();
  });

  it('creates a run, prepares it, runs its chunks against the mock and stores its scores', async () => {
    const { db } = database;
    const project = await createProject(db, 'ports');
    const judge: ResolvedModel = modelAt(mock.baseUrl, { slug: 'judge' });
    const resolveModel = async (_projectId: string, ref: string) => {
      if (ref !== 'judge') throw new Error(`unknown model ${ref}`);
      return judge;
    };
    const queue = new InlineRunQueue(db);
    const submitted: string[] = [];
    queue.subscribe({ submitted: (id) => submitted.push(id) });
    const runs = runContext({ db, environments: ['main'], queue, resolveModel, sandbox: null });
    const uploads = {
      db,
      spoolDir: path.join(fresh.dataDir, 'tmp'),
      uploadLimit: 1 << 20,
      maxRowChars: 1 << 16,
    };

    await createContainer(db, project.id, { label: 'app' });
    const items = ['good answer', 'bad answer', 'another good one', 'nope', 'good'].map((output, i) => ({
      input: `question ${i}`,
      output,
    }));
    await createDataset(uploads, project.id, { label: 'qa', items });
    await createEvaluator(
      { db, python: 'python3', resolveModel, scorerKinds: runs.scorerKinds },
      project.id,
      {
        type: 'judge',
        name: 'helpful',
        model: 'judge',
        prompt: 'Rate OUT<<{{output}}>> for {{input}}',
        pass_threshold: 0.5,
      },
    );
    const principal = { projectId: project.id, permissions: ['*'] };
    const run = await createRun(
      runs,
      principal,
      { container: 'app', evaluators: ['helpful'], sample: { type: 'dataset', dataset: 'qa', range: '0:5' } },
      null,
    );
    expect(run.status).toBe('queued');
    expect(submitted).toEqual([run.id]);

    const metrics: EngineMetrics = {
      upstreamCall: (model, kind, outcome) => calls.push({ model, kind, outcome }),
      positionsScored: (count) => {
        scored += count;
      },
      chunksInFlight: () => {},
    };
    const deps: EngineDeps = {
      db,
      readItems: (side: ReadSide, range) => readDatasetItems(db, side.ref, range),
      countItems: (side) => countDatasetItems(db, side.ref),
      // Generation and the ground-truth rule are the source registry's.
      generation: runs.sourceKinds.ports(db).generation,
      noReference: runs.sourceKinds.ports(db).noReference,
      scorerKinds: runs.scorerKinds,
      resolveModel,
      providers: layerFor(),
      limiter: createMemoryModelLimiter(),
      metrics,
      modelConcurrency: 4,
      rateLimitWaitMs: 5_000,
      ledgerFlushMs: 50,
      warn: (message) => {
        throw new Error(`unexpected warning: ${message}`);
      },
      createCodeScorer: () => Promise.reject(new Error('no code evaluators here')),
      sandbox: async () => ({ available: false, reason: 'not needed' }),
      chunkSize: 2,
      scorerIdleMs: 1_000,
      workerId: 'test-worker',
    };
    const engine = new Engine(deps);
    try {
      const chunks = (await engine.prepareRun(run.id)) as ChunkRef[];
      expect(chunks.map((c) => [c.from, c.to])).toEqual([
        [0, 2],
        [2, 4],
        [4, 5],
      ]);
      expect((await loadRun(db, run.id))?.status).toBe('running');

      const next: string[] = [];
      for (const chunk of chunks) {
        await engine.runChunk(chunk, new AbortController().signal);
        next.push(await engine.completeChunk(chunk, 'test-worker'));
      }
      // Only the last chunk leaves nothing pending: that one answers `finalize`.
      expect(next).toEqual(['continue', 'continue', 'finalize']);
      expect(await engine.finalizeRun(run.id)).toBe('completed');
      // The run is over: completing a chunk again has nothing to do.
      expect(await engine.completeChunk(chunks[0]!, 'test-worker')).toBe('nothing');
    } finally {
      await engine.close();
      await queue.close();
    }

    expect(mock.stats.requests).toBe(5);
    expect(calls).toHaveLength(5);
    expect(calls.every((c) => c.model === 'judge' && c.kind === 'judge' && c.outcome === 'ok')).toBe(true);
    expect(scored).toBe(5);
    const done = toRun(await requireRun(db, project.id, run.id), runs.sourceKinds);
    expect(done.status).toBe('completed');
    const [evaluator] = Object.values(done.results?.per_model?.[0]?.per_eval ?? {});
    expect(evaluator).toMatchObject({
      num_total: 5,
      num_scored: 5,
      num_passed: 3,
      num_failed: 2,
      num_errors: 0,
    });
    expect(done.metrics).toMatchObject({ progress: { done: 5, total: 5 } });
  });
});
