import type { Kysely } from 'kysely';
import { findDataset } from '../catalog/datasets/repository.js';
import { settleWithin } from '../catalog/logs/service.js';
import type { Database } from '../db/schema.js';
import { createScorerRegistry, type ScorerRegistry } from '../engine/scorers/registry.js';
import type { RunQueue } from '../executor/run-queue.js';
import type { ResolvedModel } from '../llm/models/types.js';
import type { SpendGuard } from '../shared/budget.js';
import { createSourceRegistry, type SourceRegistry } from '../sources/registry.js';

/** What run creation needs from the rest of the service, injected so the rules stay testable. */
export interface RunCatalog {
  findDataset(projectId: string, ref: string): Promise<{ id: string; version?: number } | undefined>;
  resolveModel(projectId: string, ref: string): Promise<ResolvedModel>;
  sandbox(): Promise<{ available: boolean; reason?: string }>;
}

export interface RunContext {
  db: Kysely<Database>;
  environments: readonly string[];
  catalog: RunCatalog;
  queue: RunQueue;
  /** A worker that has not beaten its heartbeat for this long is not counted as live. */
  workerTtlMs: number;
  /**
   * Resolves once the calls answered before it was called are stored as task logs, or after at most
   * SETTLE_WAIT_MS (a writer held up by an outage must not hold up run creation); never rejects.
   */
  settleLogs(): Promise<void>;
  /** The spend limits: a run that will call a model is refused at creation once they are spent (none: no limits). */
  budgets: Pick<SpendGuard, 'check'> | null;
  /** The app's source kinds: how each side is validated, resolved, permitted and shown. */
  sourceKinds: SourceRegistry;
  /** The app's scorer kinds: what each evaluator calls, runs and asks of a run's creator. */
  scorerKinds: ScorerRegistry;
}

/** What the run rules are built from (by the composition root). */
export interface RunParts {
  db: Kysely<Database>;
  environments: readonly string[];
  queue: RunQueue;
  resolveModel(projectId: string, ref: string): Promise<ResolvedModel>;
  /** This process's sandbox when it executes runs itself; null when workers elsewhere do. */
  sandbox: (() => Promise<{ available: boolean; reason?: string }>) | null;
  /** The task-log writer's flush (absent where nothing records calls). */
  flushLogs?: () => Promise<void>;
  /** The spend limits (absent: none). */
  budgets?: Pick<SpendGuard, 'check'> | null | undefined;
  /** The app's source kinds (absent: the built-in ones). */
  sourceKinds?: SourceRegistry;
  /** The app's scorer kinds (absent: the built-in ones). */
  scorerKinds?: ScorerRegistry;
}

/** The run rules over the service's parts. */
export function runContext(parts: RunParts): RunContext {
  return {
    db: parts.db,
    environments: parts.environments,
    queue: parts.queue,
    workerTtlMs: WORKER_TTL_MS,
    settleLogs: () => settleWithin(parts.flushLogs),
    budgets: parts.budgets ?? null,
    sourceKinds: parts.sourceKinds ?? createSourceRegistry(),
    scorerKinds: parts.scorerKinds ?? createScorerRegistry(),
    catalog: {
      findDataset: (projectId, ref) => findDataset(parts.db, projectId, ref),
      resolveModel: parts.resolveModel,
      // Code runs where the executor runs: this process, or (BullMQ, or workers only) the workers, which
      // fail the evaluator's positions with `sandbox_unavailable` when they cannot sandbox.
      sandbox: parts.sandbox ?? (async () => ({ available: true })),
    },
  };
}

/** Workers beat every second; one silent for ten is gone. */
const WORKER_TTL_MS = 10_000;
