// Database-independent: a judge's scale check is a pure function.
import { describe, expect, it } from 'vitest';
import type { CompletionResult } from '../../src/llm/types.js';
import { createJudgeScorer, type JudgeDefinition } from '../../src/scoring/judge/scorer.js';
import type { ScoreInput } from '../../src/scoring/types.js';
import type { Scale } from '../../src/shared/scale.js';

/** A judge's verdict is held to the evaluator's scale: off it, the position is an error, never a score. */

const input: ScoreInput = {
  position: 0,
  sample: { id: 'a', input: 'q', output: 'an answer', expected: null, metadata: {}, raw: null },
  groundTruth: null,
  baseline: null,
};

async function verdictOn(scale: Scale | null, score: number) {
  const def: JudgeDefinition = {
    mode: 'pointwise',
    model: 'judge',
    prompt: 'Rate {{output}}',
    inference_parameters: {},
    pass_threshold: 0.5,
    scale,
  };
  const reply = JSON.stringify({ score, reasoning: 'because' });
  const result: CompletionResult = {
    body: {},
    text: reply,
    usage: null,
    cost: 0,
    latencyMs: 1,
    servedBy: 'judge',
  };
  const scorer = createJudgeScorer(def, async () => result);
  const [outcome] = await scorer.scoreBatch([input], new AbortController().signal);
  return outcome!;
}

describe('judge verdicts against the scale', () => {
  it.each([
    [{ type: 'continuous', min: 0, max: 1 } as Scale, 1.5, 'a number 0..1'],
    [{ type: 'continuous', min: 0, max: 1 } as Scale, -0.1, 'a number 0..1'],
    [{ type: 'ordinal', min: 1, max: 5 } as Scale, 7, 'an integer 1..5'],
    [{ type: 'ordinal', min: 1, max: 5 } as Scale, 4.5, 'an integer 1..5'],
    [{ type: 'pass_fail' } as Scale, 0.5, 'pass/fail'],
  ])(
    '%j answered %d: an error naming the verdict and the scale, the verdict in the reasoning',
    async (scale, score, named) => {
      const o = await verdictOn(scale, score);
      expect(o.score).toBeNull();
      expect(o.passed).toBeNull();
      expect(o.error?.code).toBe('judge_off_scale');
      expect(o.error?.message).toContain(String(score));
      expect(o.error?.message).toContain(named);
      expect(o.reason).toBe(`verdict ${score}: because`);
    },
  );

  it.each([
    [{ type: 'continuous', min: 0, max: 1 } as Scale, 1],
    [{ type: 'ordinal', min: 1, max: 5 } as Scale, 5],
    [{ type: 'pass_fail' } as Scale, 0],
    [{ type: 'continuous', min: null, max: null } as Scale, 1e6],
    [null, 1.5],
  ])('%j answered %d: scored', async (scale, score) => {
    const o = await verdictOn(scale, score);
    expect(o.error).toBeNull();
    expect(o.score).toBe(score);
  });
});
