import { hostname } from 'node:os';
import { countDatasetItems, readDatasetItems } from '../catalog/datasets/items.js';
import { findDataset } from '../catalog/datasets/repository.js';
import { countContainerLogs, readContainerLogItems } from '../catalog/logs/items.js';
import { resolveModel } from '../catalog/models/resolve.js';
import type { Deps } from '../deps.js';
import * as runsRepo from '../runs/repository.js';
import type { RunContext } from '../runs/service.js';
import {
  codeScorerOptions,
  createCodeScorer,
  sandboxStatus,
  warnIfUnsafeCodeEvaluators,
} from '../scoring/code/scorer.js';
import type { ExecutionDeps } from './executor.js';
import { ModelGate } from './model-gate.js';
import type { PlannedSide } from './plan.js';
import { createInlineRunner, type JobRunner } from './runner.js';

/** The embedded mode's run execution: the in-process runner over the service's own parts. */
export function createRunner(
  deps: Deps,
  warn: (message: string) => void,
): { runner: JobRunner; context: RunContext; resumable: () => Promise<string[]> } {
  const { db, config } = deps;
  const models = { db, config, secretKey: deps.secretKey };
  const code = codeScorerOptions(config);
  warnIfUnsafeCodeEvaluators(config, { warn });
  const execution: ExecutionDeps = {
    db,
    readItems: (side: PlannedSide, range) =>
      side.type === 'dataset'
        ? readDatasetItems(db, side.ref ?? '', range)
        : readContainerLogItems(db, side.ref ?? '', range),
    countItems: (side: PlannedSide) =>
      side.type === 'dataset'
        ? countDatasetItems(db, side.ref ?? '')
        : countContainerLogs(db, side.ref ?? ''),
    resolveModel: (projectId, slug) => resolveModel(models, projectId, slug),
    providers: deps.providers,
    createCodeScorer: (ev) =>
      createCodeScorer(code, { id: ev.id, source: ev.source ?? '', requirements: ev.requirements }),
    gate: new ModelGate({
      concurrency: config.runs.modelConcurrency,
      transientRetries: 2,
      maxRateLimitWaits: 100,
    }),
    chunkSize: config.runs.chunkSize,
    // Enough chunks to keep every model slot busy, plus two so the next ones are ready when one ends.
    chunksInFlight: Math.ceil(config.runs.modelConcurrency / config.runs.chunkSize) + 2,
    processId: `${hostname()}:${process.pid}`,
  };
  const runner = createInlineRunner(execution, {
    maxConcurrentRuns: config.runs.maxConcurrentRuns,
    onError: (runId, err) => warn(`run ${runId} failed: ${err instanceof Error ? err.message : String(err)}`),
  });
  const context: RunContext = {
    db,
    environments: config.runs.environments,
    runner,
    catalog: {
      findDataset: (projectId, ref) => findDataset(db, projectId, ref),
      resolveModel: (projectId, ref) => resolveModel(models, projectId, ref),
      // Without a sandbox, code evaluators run only when the operator opted into rlimits alone.
      sandbox: async () => {
        const status = await sandboxStatus(config);
        return status.available || config.codeEvaluators.unsafe ? { available: true } : status;
      },
    },
  };
  return { runner, context, resumable: () => runsRepo.runsToResume(db) };
}
