import type { Kysely } from 'kysely';
import type { Database } from '../db/schema.js';
import type { EvaluatorSnapshot } from '../engine/plan.js';
import type { ScorerRegistry } from '../engine/scorers/registry.js';
import { findEvaluator } from '../evaluators/repository.js';
import { snapshotOf } from '../evaluators/snapshot.js';
import { createModelCaller, type ModelCaller } from '../llm/call-model.js';
import type { ResolvedModel } from '../llm/models/types.js';
import type { ProviderLayer } from '../llm/provider-layer.js';
import type { ModelLimiter } from '../ratelimit/model-limiter.js';
import type { Scorer } from '../scoring/types.js';
import type { Payer, SpendGuard } from '../shared/budget.js';
import type { CheckVerdict } from './builtins/types.js';

/**
 * What an evaluator guard needs: the project's evaluators, and the model call every face shares (the
 * model's limits, the payer's budget and spend), and the sandbox for code evaluators.
 */
export interface EvaluatorGuardPorts {
  db: Kysely<Database>;
  resolveModel(projectId: string, ref: string): Promise<ResolvedModel>;
  providers: Pick<ProviderLayer, 'complete' | 'embed'>;
  budgets?: SpendGuard | undefined;
  models?: { limiter: Pick<ModelLimiter, 'acquire'>; concurrency: number } | undefined;
  sandbox?: {
    status(): Promise<{ available: boolean; reason?: string }>;
    createScorer(evaluator: EvaluatorSnapshot): Promise<Scorer>;
  };
  /** The app's scorer kinds, as its runs score with them. */
  scorerKinds: ScorerRegistry;
}

/** The evaluator a check names, in the check's project only (another project's is not found). */
export async function findGuardEvaluator(
  db: Kysely<Database>,
  projectId: string,
  ref: string,
): Promise<EvaluatorSnapshot | null> {
  const row = await findEvaluator(db, projectId, ref);
  return row ? snapshotOf(row) : null;
}

/** A thrown evaluator failure: its code and message become the verdict's error. */
export class EvaluatorGuardError extends Error {
  override name = 'EvaluatorGuardError';
  constructor(
    readonly code: string,
    message: string,
  ) {
    super(message);
  }
}

/** The one model call of these ports, built once (not per guarded call). */
const callers = new WeakMap<EvaluatorGuardPorts, ModelCaller>();
function callerOf(ports: EvaluatorGuardPorts): ModelCaller {
  let caller = callers.get(ports);
  if (!caller) {
    caller = createModelCaller({ providers: ports.providers, budgets: ports.budgets, limits: ports.models });
    callers.set(ports, caller);
  }
  return caller;
}

/**
 * Scores one text with an evaluator, through the scorer registry as a run would: the text is the
 * sample's output, the request's messages its input. Its model calls are paid by the call's payer.
 */
export async function evaluate(
  ports: EvaluatorGuardPorts,
  ev: EvaluatorSnapshot,
  payer: Payer,
  sample: { input: unknown; output: string },
  signal: AbortSignal,
): Promise<CheckVerdict> {
  const caller = callerOf(ports);
  const models = new Map<string, ResolvedModel>();
  const modelOf = async (name: string) => {
    let m = models.get(name);
    if (!m) {
      m = await ports.resolveModel(payer.projectId, name);
      models.set(name, m);
    }
    return m;
  };
  const scorer = await ports.scorerKinds.createScorer(ev, {
    complete: async (name, request, s) => caller.complete(await modelOf(name), request, { payer, signal: s }),
    embed: async (name, input, s) => caller.embed(await modelOf(name), input, { payer, signal: s }),
    createCodeScorer: (e) => {
      if (!ports.sandbox) throw new EvaluatorGuardError('sandbox_unavailable', 'No sandbox in this process');
      return ports.sandbox.createScorer(e);
    },
    sandbox: async () =>
      ports.sandbox ? ports.sandbox.status() : { available: false, reason: 'no sandbox' },
  });
  try {
    const item = {
      id: 'guard',
      input: sample.input,
      output: sample.output,
      expected: null,
      metadata: {},
      raw: null,
    };
    const [outcome] = await scorer.scoreBatch(
      [{ position: 0, sample: item, groundTruth: null, baseline: null }],
      signal,
    );
    if (!outcome) throw new EvaluatorGuardError('evaluator_error', 'the evaluator gave no verdict');
    if (outcome.error) throw new EvaluatorGuardError(outcome.error.code, outcome.error.message);
    const passed =
      ev.pass_threshold !== null && typeof outcome.score === 'number'
        ? outcome.score >= ev.pass_threshold
        : (outcome.passed ?? (typeof outcome.score === 'number' ? outcome.score >= 0.5 : true));
    return {
      triggered: !passed,
      score: outcome.score ?? (passed ? 1 : 0),
      reason: outcome.reason
        ? outcome.reason.slice(0, 500)
        : `evaluator '${ev.name}' ${passed ? 'passed' : 'failed'}`,
      cost: outcome.cost,
    };
  } finally {
    await scorer.close();
  }
}
