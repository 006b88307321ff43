// Database-independent: a run's metrics are computed from counters handed in, with no store.
import { describe, expect, it } from 'vitest';
import type { Layout } from '../../src/engine/plan.js';
import { runMetrics } from '../../src/engine/progress.js';
import type { RunCounters } from '../../src/engine/store/runs.js';

const counters = (over: Partial<RunCounters> = {}): RunCounters => ({
  done_positions: 0,
  total_positions: 0,
  judge_calls: 0,
  judge_prompt_tokens: 0,
  judge_completion_tokens: 0,
  judge_unpriced_calls: 0,
  judge_cost: 0,
  generation_calls: 0,
  generation_prompt_tokens: 0,
  generation_completion_tokens: 0,
  generation_unpriced_calls: 0,
  generation_cost: 0,
  ...over,
});
const layout: Layout = {
  positions: 8,
  expected: 10,
  offsets: { sample: 0, ground_truth: 0, baseline: null },
};

describe('runMetrics', () => {
  it('adds judge and generation calls and tokens into the totals', () => {
    const m = runMetrics(
      counters({
        done_positions: 3,
        total_positions: 8,
        judge_calls: 4,
        judge_prompt_tokens: 400,
        judge_completion_tokens: 40,
        judge_unpriced_calls: 1,
        judge_cost: 0.1 + 0.2,
        generation_calls: 2,
        generation_prompt_tokens: 100,
        generation_completion_tokens: 60,
        generation_cost: 0.05,
      }),
      layout,
      '2026-01-01T00:00:00.000Z',
      '2026-01-01T00:00:02.500Z',
    );
    expect(m).toEqual({
      progress: { done: 3, total: 8 },
      duration_ms: 2500,
      positions: 8,
      expected_positions: 10,
      judge: { calls: 4, unpriced_calls: 1, cost: 0.3, prompt_tokens: 400, completion_tokens: 40 },
      generation: { calls: 2, unpriced_calls: 0, cost: 0.05, prompt_tokens: 100, completion_tokens: 60 },
      calls: 6,
      tokens: { prompt: 500, completion: 100 },
    });
  });

  it('rounds costs to 1e-10 USD, so sums of many small costs read cleanly', () => {
    const m = runMetrics(counters({ judge_cost: 0.1 + 0.2, generation_cost: 1e-12 }), layout, null, null);
    expect(m.judge.cost).toBe(0.3);
    expect(m.generation.cost).toBe(0);
  });

  it('reads zeros and no total before the run is laid out, and no duration before it starts', () => {
    const m = runMetrics(null, null, null, null);
    expect(m.progress).toEqual({ done: 0, total: null });
    expect(m.duration_ms).toBeNull();
    expect(m.positions).toBeNull();
    expect(m.expected_positions).toBeNull();
    expect(m.calls).toBe(0);
    expect(m.judge).toEqual({ calls: 0, unpriced_calls: 0, cost: 0, prompt_tokens: 0, completion_tokens: 0 });
  });

  it('measures a running run up to now, and never a negative duration', () => {
    const startedAt = new Date(Date.now() - 1_000).toISOString();
    const running = runMetrics(counters(), layout, startedAt, null);
    expect(running.duration_ms).toBeGreaterThanOrEqual(1_000);
    expect(running.duration_ms).toBeLessThan(60_000);
    const skewed = runMetrics(counters(), layout, '2026-01-01T00:00:05Z', '2026-01-01T00:00:00Z');
    expect(skewed.duration_ms).toBe(0);
  });
});
