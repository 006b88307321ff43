/**
 * Test factories for the engine's ports: `engineDeps(db, overrides)` builds everything `new Engine(…)`
 * takes (EngineDeps, engine/work.ts) from a database alone, with datasets as the item source, the real
 * provider layer, an in-memory model limiter and no code sandbox; `scorerPorts(overrides)` builds what
 * a scorer may use (engine/scorers/kind.ts) with every call refused. A test overrides what it exercises.
 */
import type { Kysely } from 'kysely';
import { countDatasetItems, readDatasetItems } from '../../src/catalog/datasets/items.js';
import type { ResolvedModel } from '../../src/catalog/models/types.js';
import type { Database } from '../../src/db/schema.js';
import type { ScorerPorts } from '../../src/engine/scorers/registry.js';
import type { EngineDeps } from '../../src/engine/work.js';
import type { EngineMetrics } from '../../src/observability/types.js';
import { createMemoryModelLimiter } from '../../src/ratelimit/model-limiter-memory.js';
import { layerFor } from '../inference/layer-helpers.js';

/** Engine metrics that remember what they were told. */
export interface RecordedMetrics extends EngineMetrics {
  calls: { model: string; kind: string; outcome: string }[];
  scored: number;
}

export function recordingMetrics(): RecordedMetrics {
  const m: RecordedMetrics = {
    calls: [],
    scored: 0,
    upstreamCall: (model, kind, outcome) => m.calls.push({ model, kind, outcome }),
    positionsScored: (count) => {
      m.scored += count;
    },
    chunksInFlight: () => {},
  };
  return m;
}

/** A model resolver over a fixed table of slugs; any other slug is unknown. */
export function modelsBySlug(models: Record<string, ResolvedModel>): EngineDeps['resolveModel'] {
  return async (_projectId, slug) => {
    const model = models[slug];
    if (!model) throw new Error(`unknown model ${slug}`);
    return model;
  };
}

export function engineDeps(db: Kysely<Database>, overrides: Partial<EngineDeps> = {}): EngineDeps {
  return {
    db,
    readItems: (side, range) => readDatasetItems(db, side.ref ?? '', range),
    countItems: (side) => countDatasetItems(db, side.ref ?? ''),
    resolveModel: modelsBySlug({}),
    providers: layerFor(),
    limiter: createMemoryModelLimiter(),
    metrics: recordingMetrics(),
    modelConcurrency: 4,
    rateLimitWaitMs: 5_000,
    ledgerFlushMs: 50,
    warn: (message) => {
      throw new Error(`unexpected warning: ${message}`);
    },
    createCodeScorer: () => Promise.reject(new Error('no code evaluators here')),
    sandbox: async () => ({ available: false, reason: 'no sandbox in this test' }),
    chunkSize: 2,
    scorerIdleMs: 1_000,
    workerId: 'test-worker',
    ...overrides,
  };
}

export function scorerPorts(overrides: Partial<ScorerPorts> = {}): ScorerPorts {
  return {
    complete: () => Promise.reject(new Error('no model calls here')),
    embed: () => Promise.reject(new Error('no embeddings here')),
    createCodeScorer: () => Promise.reject(new Error('no code evaluators here')),
    sandbox: async () => ({ available: false, reason: 'no sandbox in this test' }),
    ...overrides,
  };
}
