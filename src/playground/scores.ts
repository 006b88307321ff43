import type { Item } from '../catalog/items.js';
import type { EvaluatorSnapshot } from '../engine/plan.js';
import type { ScorerPorts, ScorerRegistry } from '../engine/scorers/registry.js';
import type { ModelCaller } from '../llm/call-model.js';
import type { ResolvedModel } from '../llm/models/types.js';
import type { Scorer } from '../scoring/types.js';
import type { Payer } from '../shared/budget.js';
import { ApiError, errorOf } from '../shared/errors.js';
import type { AnswerScore, ModelAnswer } from './answer.js';

/** What scoring an answer on the spot uses: the one model call for judges, the sandbox for code. */
export interface ScoringPorts {
  caller: ModelCaller;
  resolveModel(projectId: string, ref: string): Promise<ResolvedModel>;
  sandbox: {
    status(): Promise<{ available: boolean; reason?: string }>;
    createScorer(evaluator: EvaluatorSnapshot): Promise<Scorer>;
  };
  /** The app's scorer kinds, as the runs and monitors score with them. */
  scorerKinds: ScorerRegistry;
}

/** The scorer registry's ports for one payer: judges' and graders' calls are paid like the answers. */
function scorerPorts(ports: ScoringPorts, payer: Payer): ScorerPorts {
  const model = (ref: string) => ports.resolveModel(payer.projectId, ref);
  return {
    complete: async (ref, request, signal) =>
      ports.caller.complete(await model(ref), request, { payer, signal }),
    embed: async (ref, input, signal) => {
      return ports.caller.embed(await model(ref), input, { payer, signal });
    },
    createCodeScorer: (ev) => ports.sandbox.createScorer(ev),
    sandbox: () => ports.sandbox.status(),
  };
}

const failed = (ev: EvaluatorSnapshot, err: unknown): AnswerScore => ({
  evaluator_id: ev.id,
  name: ev.name,
  score: null,
  passed: null,
  reason: null,
  error: errorOf(
    err,
    { code: 'scoring_failed', message: 'The evaluator failed' },
    (e) => e instanceof ApiError,
  ),
  cost: 0,
});

/**
 * Each evaluator's verdict on one answer, by the scorer the runs and monitors use (the registry's): the
 * answer is the sample, the edited messages its input, `expected` its reference. An evaluator that
 * cannot score it says why (its error), the others still score.
 */
export async function scoreAnswer(
  ports: ScoringPorts,
  payer: Payer,
  evaluators: readonly EvaluatorSnapshot[],
  sample: { input: unknown; answer: ModelAnswer; expected: unknown },
  signal: AbortSignal,
): Promise<AnswerScore[]> {
  const item: Item = {
    id: sample.answer.task_log_id ?? 'playground',
    input: sample.input,
    output: sample.answer.output,
    expected: sample.expected ?? null,
    metadata: { model: sample.answer.model },
    raw: null,
  };
  const input = { position: 0, sample: item, groundTruth: null, baseline: null };
  const sp = scorerPorts(ports, payer);
  return Promise.all(
    evaluators.map(async (ev): Promise<AnswerScore> => {
      const unreadable = ports.scorerKinds.errorReason(ev, input);
      if (unreadable) return failed(ev, new ApiError('bad_request', unreadable.message));
      const missing = ports.scorerKinds.missingReason(ev, input);
      if (missing) return failed(ev, new ApiError('bad_request', `Not scored: ${missing}`));
      let scorer: Scorer | null = null;
      try {
        scorer = await ports.scorerKinds.createScorer(ev, sp);
        const [o] = await scorer.scoreBatch([input], signal);
        if (!o) return failed(ev, new Error('no verdict'));
        // As a run's row says it: the threshold when one is set, else the evaluator's own verdict.
        const passed =
          ev.pass_threshold !== null && typeof o.score === 'number' ? o.score >= ev.pass_threshold : o.passed;
        return {
          evaluator_id: ev.id,
          name: ev.name,
          score: o.error ? null : o.score,
          passed: o.error ? null : passed,
          reason: o.reason,
          error: o.error,
          cost: o.cost,
        };
      } catch (err) {
        return failed(ev, err);
      } finally {
        await scorer?.close().catch(() => {});
      }
    }),
  );
}
