import type { ModelLimiter, ModelLimits } from '../ratelimit/model-limiter.js';
import type { Payer, SpendGuard } from '../shared/budget.js';
import type { CachePolicy, ResponseCache } from './cache/cache.js';
import { type EmbeddingsResult, embedTexts } from './embeddings.js';
import { maxCallCost, maxEmbeddingsCost } from './estimate.js';
import type { ResolvedModel } from './models/types.js';
import { type PaidPermit, paidCall } from './paid-call.js';
import type { ProviderLayer } from './provider-layer.js';
import type { ChatRequest, CompletionResult, Usage } from './types.js';

/**
 * The model call of every face that is not the gateway's HTTP edge (judges, generation, graders, monitors,
 * simulated users): one entry point that owns the whole paid call — the model limiter's permit, the
 * budget's reservation of the call's largest cost, the response cache, the provider layer (retries,
 * fallbacks, egress policy), the settlement and the tokens released to the limiter. Callers say who pays
 * and what they want kept; they assemble nothing.
 */

/** What the process gives the model call: built once by whoever composes the caller. */
export interface ModelCallPorts {
  providers: Pick<ProviderLayer, 'complete' | 'embed'>;
  /** The payers' budgets; absent: nothing is reserved or charged. */
  budgets?: SpendGuard | undefined;
  /** Per-model concurrency, RPM and TPM shared by every caller of the process (or of the cluster). */
  limits?: { limiter: Pick<ModelLimiter, 'acquire'>; concurrency: number } | undefined;
  /** The response cache, used by calls that name a policy. */
  cache?: ResponseCache | undefined;
}

/** One call's terms: who pays, when to give up, and what the caller keeps of it. */
export interface ModelCallOptions {
  payer: Payer;
  signal: AbortSignal;
  /** Through the response cache with this policy (a hit costs nothing); absent: straight to the provider. */
  cache?: CachePolicy | null | undefined;
  /** Checked once the permit is held, before the budget (e.g. a run that was abandoned meanwhile). */
  admit?: (() => void) | undefined;
  /** Told when the call itself begins (permit held, budget reserved): the caller's clock starts here. */
  started?: (() => void) | undefined;
  /** Told of the budget's refusal before it is thrown. */
  refused?: ((err: unknown) => Promise<void>) | undefined;
  /** Told what the answered call used and cost, before the reservation is settled. */
  spent?: ((usage: Usage | null, cost: number) => void) | undefined;
}

export interface ModelCaller {
  /** A chat completion of `model`, paid as one call. */
  complete(model: ResolvedModel, request: ChatRequest, options: ModelCallOptions): Promise<CompletionResult>;
  /** The vectors of `input`, paid as one call at the model's input price. */
  embed(model: ResolvedModel, input: string[], options: ModelCallOptions): Promise<EmbeddingsResult>;
}

/** The model's limits under the process's concurrency: what every caller of the model shares. */
export function limitsOf(model: ResolvedModel, concurrency: number): ModelLimits {
  return { concurrency, rpm: model.limits.rpm, tpm: model.limits.tpm };
}

export function createModelCaller(ports: ModelCallPorts): ModelCaller {
  const permitOf = (model: ResolvedModel, signal: AbortSignal): (() => Promise<PaidPermit>) | undefined => {
    const shared = ports.limits;
    if (!shared) return undefined;
    const limits = limitsOf(model, shared.concurrency);
    return () => shared.limiter.acquire(model.slug, limits, signal);
  };
  const terms = (model: ResolvedModel, options: ModelCallOptions) => ({
    payer: options.payer,
    permit: permitOf(model, options.signal),
    admit: options.admit,
    refused: options.refused,
  });

  return {
    complete(model, request, options) {
      const { signal, payer, cache } = options;
      const provider = () => ports.providers.complete(model, request, { signal, projectId: payer.projectId });
      return paidCall<CompletionResult>(ports, {
        ...terms(model, options),
        estimate: maxCallCost(model, request),
        run: () => {
          options.started?.();
          return cache && ports.cache
            ? ports.cache
                .complete(payer.projectId, model, 'chat', request, cache, provider)
                .then((c) => c.result)
            : provider();
        },
        cost: (r) => r.cost,
        tokens: (r) => (r.usage?.prompt_tokens ?? 0) + (r.usage?.completion_tokens ?? 0),
        spent: options.spent && ((r, cost) => options.spent?.(r.usage, cost)),
      });
    },
    embed(model, input, options) {
      return paidCall<EmbeddingsResult>(ports, {
        ...terms(model, options),
        estimate: maxEmbeddingsCost(model, { input }),
        run: () => {
          options.started?.();
          return embedTexts(ports.providers, model, input, options.signal);
        },
        cost: (r) => r.cost,
        tokens: (r) => r.usage?.prompt_tokens ?? 0,
        spent: options.spent && ((r, cost) => options.spent?.(r.usage, cost)),
      });
    },
  };
}
