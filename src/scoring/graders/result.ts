import type { ChatRequest, CompletionResult } from '../../llm/types.js';
import type { Scorer } from '../types.js';
import type { PythonGrader } from './schemas.js';

/** The error flags of OpenAI's grader metadata (`metadata.errors`), each false unless it happened. */
export interface GraderErrorFlags {
  formula_parse_error: boolean;
  invalid_variable_error: boolean;
  model_grader_parse_error: boolean;
  model_grader_refusal_error: boolean;
  model_grader_server_error: boolean;
  model_grader_server_error_details: string | null;
  other_error: boolean;
  python_grader_runtime_error: boolean;
  python_grader_runtime_error_details: string | null;
  python_grader_server_error: boolean;
  python_grader_server_error_type: string | null;
  sample_parse_error: boolean;
  truncated_observation_error: boolean;
  unresponsive_reward_error: boolean;
}

export type ErrorKind =
  | 'formula_parse_error'
  | 'invalid_variable_error'
  | 'model_grader_parse_error'
  | 'model_grader_refusal_error'
  | 'model_grader_server_error'
  | 'other_error'
  | 'python_grader_runtime_error'
  | 'python_grader_server_error'
  | 'sample_parse_error'
  // A text over text_similarity's caps (text-limits.ts); OpenAI's metadata flags it as `other_error`.
  | 'text_too_long';

export interface TokenUsage {
  prompt_tokens: number;
  completion_tokens: number;
  total_tokens: number;
}

/** One grader's verdict on one item. `error` set means no score: the item is errored, never scored. */
export interface GraderResult {
  reward: number | null;
  passed: boolean | null;
  reason: string | null;
  error: { code: ErrorKind; message: string } | null;
  errors: GraderErrorFlags;
  /** Rewards of a multi grader's sub-graders by name (empty for the others). */
  subRewards: Record<string, number | null>;
  /** What the grader computed beside the reward (metric, label, model reply). */
  scores: Record<string, unknown>;
  /** Token usage by model name. */
  usage: Record<string, TokenUsage>;
  cost: number;
  calls: number;
  logs: string | null;
}

export function noErrors(): GraderErrorFlags {
  return {
    formula_parse_error: false,
    invalid_variable_error: false,
    model_grader_parse_error: false,
    model_grader_refusal_error: false,
    model_grader_server_error: false,
    model_grader_server_error_details: null,
    other_error: false,
    python_grader_runtime_error: false,
    python_grader_runtime_error_details: null,
    python_grader_server_error: false,
    python_grader_server_error_type: null,
    sample_parse_error: false,
    truncated_observation_error: false,
    unresponsive_reward_error: false,
  };
}

export function scored(
  reward: number,
  passed: boolean | null,
  fields: Partial<GraderResult> = {},
): GraderResult {
  return {
    reward,
    passed,
    reason: null,
    error: null,
    errors: noErrors(),
    subRewards: {},
    scores: {},
    usage: {},
    cost: 0,
    calls: 0,
    logs: null,
    ...fields,
  };
}

/** An errored result: the kind's flag set, its details where OpenAI's metadata has a field for them. */
export function failed(kind: ErrorKind, message: string, fields: Partial<GraderResult> = {}): GraderResult {
  const errors = noErrors();
  errors[kind === 'text_too_long' ? 'other_error' : kind] = true;
  if (kind === 'model_grader_server_error') errors.model_grader_server_error_details = message;
  if (kind === 'python_grader_runtime_error') errors.python_grader_runtime_error_details = message;
  return { ...scored(0, null, fields), reward: null, error: { code: kind, message }, errors };
}

export interface EmbeddingResult {
  vectors: number[][];
  usage: TokenUsage | null;
  cost: number;
}

/**
 * What graders need from outside, by model name as the grader gives it: already bound to the caller's
 * project (and, in runs, to the run's limits and ledger).
 */
export interface GraderPorts {
  complete(model: string, request: ChatRequest, signal: AbortSignal): Promise<CompletionResult>;
  embed(model: string, input: string[], signal: AbortSignal): Promise<EmbeddingResult>;
  /** A sandboxed scorer for a python grader's wrapped source (closed by the caller). */
  python(grader: PythonGrader): Promise<Scorer>;
}

/** Template namespaces: `item` (the dataset row) and `sample` (see sample.ts). */
export interface GraderContext {
  item: unknown;
  sample: Record<string, unknown>;
}
