import { usd } from '../shared/numbers.js';
import type { Layout } from './plan.js';
import type { RunCounters } from './store/runs.js';

/** What a run's calls of one kind cost so far. */
export interface CallTotals {
  calls: number;
  /** Calls whose cost is unknown (no price for the model, or no usage in the answer): counted at 0 USD. */
  unpriced_calls: number;
  cost: number;
  prompt_tokens: number;
  completion_tokens: number;
}

export interface RunMetrics {
  progress: { done: number; total: number | null };
  duration_ms: number | null;
  positions: number | null;
  expected_positions: number | null;
  judge: CallTotals;
  generation: CallTotals;
  calls: number;
  tokens: { prompt: number; completion: number };
}

/**
 * A run's `metrics`, from the counters every executing process increments in the database: right
 * whichever process asks, while the run executes and after.
 */
export function runMetrics(
  c: RunCounters | null,
  layout: Layout | null,
  startedAt: string | null,
  until: string | null,
): RunMetrics {
  const n = (v: number | undefined) => v ?? 0;
  const judge: CallTotals = {
    calls: n(c?.judge_calls),
    unpriced_calls: n(c?.judge_unpriced_calls),
    cost: usd(n(c?.judge_cost)),
    prompt_tokens: n(c?.judge_prompt_tokens),
    completion_tokens: n(c?.judge_completion_tokens),
  };
  const generation: CallTotals = {
    calls: n(c?.generation_calls),
    unpriced_calls: n(c?.generation_unpriced_calls),
    cost: usd(n(c?.generation_cost)),
    prompt_tokens: n(c?.generation_prompt_tokens),
    completion_tokens: n(c?.generation_completion_tokens),
  };
  const start = startedAt ? Date.parse(startedAt) : null;
  const end = until ? Date.parse(until) : Date.now();
  return {
    progress: { done: n(c?.done_positions), total: layout ? n(c?.total_positions) : null },
    duration_ms: start === null ? null : Math.max(0, end - start),
    positions: layout?.positions ?? null,
    expected_positions: layout?.expected ?? null,
    judge,
    generation,
    calls: judge.calls + generation.calls,
    tokens: {
      prompt: judge.prompt_tokens + generation.prompt_tokens,
      completion: judge.completion_tokens + generation.completion_tokens,
    },
  };
}
