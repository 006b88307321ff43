import type { Item } from '../catalog/items.js';
import type { ErrorBody } from '../shared/errors.js';

/** What a scorer sees for one position: the aligned items of each side (null when a side is absent). */
export interface ScoreInput {
  position: number;
  sample: Item | null;
  groundTruth: Item | null;
  baseline: Item | null;
}

/** The verdict on one position. `error` set means the position was not scored. */
export interface ScoreOutcome {
  score: number | null;
  passed: boolean | null;
  reason: string | null;
  error: ErrorBody | null;
  /** Captured stdout/stderr of code evaluators (truncated), or judge raw reply on parse failure. */
  logs: string | null;
  usage: { prompt_tokens: number; completion_tokens: number } | null;
  cost: number;
  latencyMs: number;
  /** Anything else worth keeping on the per-sample row (e.g. pairwise verdicts). */
  extra: Record<string, unknown>;
}

/** An outcome with nothing in it but `fields`: no score, no cost. */
export function outcomeOf(fields: Partial<ScoreOutcome>): ScoreOutcome {
  return {
    score: null,
    passed: null,
    reason: null,
    error: null,
    logs: null,
    usage: null,
    cost: 0,
    latencyMs: 0,
    extra: {},
    ...fields,
  };
}

/**
 * One evaluator prepared for one launch. Judges and code evaluators are the two implementations;
 * the engine calls `scoreBatch` with positions in order and `close` when the launch is done.
 */
export interface Scorer {
  scoreBatch(inputs: ScoreInput[], signal: AbortSignal): Promise<ScoreOutcome[]>;
  close(): Promise<void>;
}

/**
 * A scorer that cannot be prepared at all (e.g. its requirements fail to install). The run fails with
 * this code and message; unlike per-sample errors it is not retried.
 */
export class ScorerSetupError extends Error {
  override name = 'ScorerSetupError';
  constructor(
    readonly code: string,
    message: string,
  ) {
    super(message);
  }
}
