import type { ChatRequest, CompletionResult } from '../../llm/types.js';
import type { EmbeddingResult } from '../../scoring/graders/result.js';
import type { SubGrader } from '../../scoring/graders/schemas.js';
import type { Scorer } from '../../scoring/types.js';
import type { EvaluatorSnapshot } from '../plan.js';

/** What a scorer may use: the run's model calls (limits, budget, ledger) and the code sandbox. */
export interface ScorerPorts {
  /** A judge or grader model call of the run. */
  complete(model: string, request: ChatRequest, signal: AbortSignal): Promise<CompletionResult>;
  embed(model: string, input: string[], signal: AbortSignal): Promise<EmbeddingResult>;
  /** The sandboxed scorer of a code evaluator (or of a python grader's wrapped source). */
  createCodeScorer(evaluator: EvaluatorSnapshot): Promise<Scorer>;
  /** Whether code can run in this process (a sandbox, or the operator's opt-out). */
  sandbox(): Promise<{ available: boolean; reason?: string }>;
}

/**
 * What an evaluator's capabilities are decided from: its kind (its grader's type, else its own type),
 * its grader and its model. A stored evaluator, a run's snapshot and an eval's criterion all have these.
 */
export interface EvaluatorShape {
  type: string;
  grader?: SubGrader | null;
  model?: string | null;
}

/** What an evaluator reads at a position beyond the sample's output, which every scorer reads. */
export interface Needs {
  /** An expected value (ground truth, or the sample item's own `expected`). */
  expected: boolean;
  /** A baseline output (pairwise judges). */
  baseline: boolean;
}

/**
 * One kind of scorer: how it is made for an evaluator, and what a position must carry for it to score.
 * `sandboxed` kinds run code: the registry checks the sandbox once for all of them, naming the kind.
 */
export interface ScorerKind {
  /** Set when the kind runs code in the sandbox: its name in the "cannot run on this worker" error. */
  sandboxed?: string;
  /**
   * Whether scoring with the evaluator calls a model (a judge, a model grader, embeddings): a paid
   * call, so a run checks its project's budget and its creator's right to call models. Absent: never.
   */
  callsModel?(evaluator: EvaluatorShape): boolean;
  /** The model scoring with the evaluator calls, as the evaluator names it; null (or absent): none. */
  modelOf?(evaluator: EvaluatorShape): string | null;
  needs(evaluator: EvaluatorSnapshot): Needs;
  /**
   * Set when the kind scores what a sample did (its turns, its tool calls) rather than its answer: a
   * sample without output is still scored (the scorer says itself what is missing).
   */
  outputOptional?: boolean;
  create(evaluator: EvaluatorSnapshot, ports: ScorerPorts): Scorer | Promise<Scorer>;
}

/** Needs nothing beyond the sample's output. */
export const OUTPUT_ONLY: Needs = Object.freeze({ expected: false, baseline: false });
