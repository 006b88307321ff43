import type { Item } from '../../catalog/items.js';
import { outcomeOf, type ScoreInput, type ScoreOutcome, type Scorer } from '../types.js';
import { grade } from './grade.js';
import { graderPromptHash } from './model.js';
import type { GraderContext, GraderPorts, GraderResult } from './result.js';
import { sampleNamespace } from './sample.js';
import type { SubGrader } from './schemas.js';

function isObject(v: unknown): v is Record<string, unknown> {
  return v !== null && typeof v === 'object' && !Array.isArray(v);
}

/**
 * The namespaces of one run position: `item` is the dataset row (its own fields, then `input`,
 * `expected` and `metadata`), `sample` the sample side's output (see sample.ts).
 */
export function namespacesOf(input: ScoreInput): GraderContext {
  const s: Item | null = input.sample;
  const g: Item | null = input.groundTruth;
  const evalItem = s?.evalItem ?? g?.evalItem;
  // An OpenAI eval run's item is the templates' `item` namespace as given.
  if (evalItem) return { item: evalItem, sample: { ...sampleNamespace(s?.output ?? null) } };
  const row = isObject(g?.raw) ? g.raw : isObject(s?.raw) ? s.raw : {};
  return {
    item: {
      ...row,
      input: s?.input ?? g?.input ?? null,
      expected: g?.expected ?? s?.expected ?? null,
      metadata: { ...(g?.metadata ?? {}), ...(s?.metadata ?? {}) },
    },
    sample: { ...sampleNamespace(s?.output ?? null) },
  };
}

/** A run's verdict from a grader's: an errored grade is an errored position, never a score. */
export function outcomeOfGrade(result: GraderResult, latencyMs: number): ScoreOutcome {
  const usage = Object.values(result.usage);
  return outcomeOf({
    score: result.reward,
    passed: result.error ? null : result.passed,
    reason: result.reason,
    error: result.error ? { code: result.error.code, message: result.error.message } : null,
    logs: result.logs,
    usage: usage.length
      ? {
          prompt_tokens: usage.reduce((n, u) => n + u.prompt_tokens, 0),
          completion_tokens: usage.reduce((n, u) => n + u.completion_tokens, 0),
        }
      : null,
    cost: result.cost,
    latencyMs,
    extra: Object.keys(result.scores).length ? { scores: result.scores, calls: result.calls } : {},
  });
}

/**
 * An evaluator of a grader type, for one launch of a run. A model grader's outcomes carry the hash of the
 * prompt it asked with, so that scores (and agreement) of two versions of its prompt are kept apart.
 */
export function createGraderScorer(grader: SubGrader, ports: GraderPorts): Scorer {
  const promptHash =
    grader.type === 'score_model' || grader.type === 'label_model' ? graderPromptHash(grader) : null;
  return {
    async scoreBatch(inputs, signal) {
      return Promise.all(
        inputs.map(async (input) => {
          const t0 = performance.now();
          const result = await grade(grader, namespacesOf(input), ports, signal);
          const outcome = outcomeOfGrade(result, performance.now() - t0);
          if (promptHash !== null) outcome.extra = { ...outcome.extra, prompt_hash: promptHash };
          return outcome;
        }),
      );
    },
    async close() {},
  };
}

/**
 * A python grader in a run: the sandboxed code scorer of its wrapped source (see python.ts), handed
 * each position's two namespaces as the item's `input` (the item) and `output` (the sample).
 */
export function pythonGraderScorer(code: Scorer): Scorer {
  return {
    scoreBatch(inputs, signal) {
      return code.scoreBatch(
        inputs.map((input) => {
          const ns = namespacesOf(input);
          return {
            position: input.position,
            sample: { id: '', input: ns.item, output: ns.sample, expected: null, metadata: {}, raw: null },
            groundTruth: null,
            baseline: null,
          };
        }),
        signal,
      );
    },
    close: () => code.close(),
  };
}
