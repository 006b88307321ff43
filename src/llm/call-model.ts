import type { ModelLimiter, ModelLimits } from '../ratelimit/model-limiter.js';
import type { Payer, SpendGuard } from '../shared/budget.js';
import type { JsonObject } from '../shared/json.js';
import type { CacheOutcome, CachePolicy, ResponseCache } from './cache/cache.js';
import type { EntryKind } from './cache/key.js';
import { CallCanceller, type CancelSignal, onCancel } from './cancel.js';
import { type EmbeddingsResult, embedTexts } from './embeddings.js';
import { maxCallCost, maxEmbeddingsCost } from './estimate.js';
import type { ResolvedModel } from './models/types.js';
import { type PaidCall, type PaidPermit, paidCall } from './paid-call.js';
import type { GatewayCompletion, ProviderLayer, StreamCallOptions } from './provider-layer.js';
import type { ChatStream } from './stream-pump.js';
import type { ChatRequest, CompletionResult, Usage } from './types.js';

/**
 * The model call of every face (judges, generation, graders, monitors, simulated users, and the
 * gateway's routes): one entry point that owns the whole paid call — the model limiter's permit, the
 * budget's reservation of the call's largest cost, the response cache, the provider layer (retries,
 * fallbacks, egress policy), the settlement and the tokens released to the limiter. Callers say who pays
 * and what they want kept; they assemble nothing.
 */

/** What the process gives the model call: built once by whoever composes the caller. */
export interface ModelCallPorts {
  providers: Pick<ProviderLayer, 'complete' | 'embed'> & Partial<Pick<ProviderLayer, 'stream'>>;
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

/**
 * The terms of a call forwarded as the client sent it (the gateway's routes): the provider layer's own
 * options (fallbacks, the charge of each retry, hops, a native API, stream collection), the request's
 * text for the estimate, and what the cache keeps the answer as.
 */
export interface ForwardOptions extends Omit<ModelCallOptions, 'signal'> {
  /** An AbortSignal, or the gateway's cheaper CallCanceller. */
  signal: CancelSignal;
  /** The request as received: its size bounds the input tokens of the estimate. */
  requestText?: string | null | undefined;
  /** As the provider layer takes them; `signal` and the payer's project are set from the call's terms. */
  upstream?: Omit<StreamCallOptions, 'signal'> | undefined;
  /** The cache entry's kind: a chat completion (default) or a native API's body. */
  kind?: EntryKind | undefined;
}

/** An answer and what the response cache did for it (null: the call did not go through the cache). */
export interface Cached<T> {
  value: T;
  outcome: CacheOutcome | null;
}

/** What a consumed stream amounted to: what is paid, and the tokens told to the limiter. */
export interface ConsumedStream {
  usage: Usage | null;
  cost: number;
}

export interface ModelCaller {
  /** A chat completion of `model`, paid as one call. */
  complete(model: ResolvedModel, request: ChatRequest, options: ModelCallOptions): Promise<CompletionResult>;
  /** The vectors of `input`, paid as one call at the model's input price. */
  embed(model: ResolvedModel, input: string[], options: ModelCallOptions): Promise<EmbeddingsResult>;
  /**
   * A non-streamed call as the client sent it (a chat completion, or a native body with `upstream.api`):
   * the provider layer's answer (body, bytes, attempts, who served it) and the cache's outcome.
   */
  forward(
    model: ResolvedModel,
    request: ChatRequest,
    options: ForwardOptions,
  ): Promise<Cached<GatewayCompletion>>;
  /**
   * A streamed call: opened (through the cache when `cache` names a policy), then handed to `consume`,
   * which sends it on and says what it amounted to; that is what is paid.
   */
  stream<R extends ConsumedStream>(
    model: ResolvedModel,
    request: ChatRequest,
    options: ForwardOptions,
    consume: (opened: Cached<ChatStream>) => Promise<R>,
  ): Promise<R>;
  /** Embeddings of a request as the client sent it, paid at the model's input price. */
  embedRequest(
    model: ResolvedModel,
    request: JsonObject,
    options: ForwardOptions,
  ): Promise<Cached<GatewayCompletion>>;
}

/** The model's limits under the process's concurrency: what every caller of the model shares. */
export function limitsOf(model: ResolvedModel, concurrency: number): ModelLimits {
  return { concurrency, rpm: model.limits.rpm, tpm: model.limits.tpm };
}

/** The limiter waits on an AbortSignal: a CallCanceller is watched by one made for the call. */
function abortSignalOf(signal: CancelSignal): AbortSignal {
  if (!(signal instanceof CallCanceller)) return signal;
  const controller = new AbortController();
  if (signal.aborted) controller.abort();
  else onCancel(signal, () => controller.abort());
  return controller.signal;
}

const totalTokens = (usage: Usage | null | undefined) =>
  (usage?.prompt_tokens ?? 0) + (usage?.completion_tokens ?? 0);

export function createModelCaller(ports: ModelCallPorts): ModelCaller {
  const permitOf = (model: ResolvedModel, signal: CancelSignal): (() => Promise<PaidPermit>) | undefined => {
    const shared = ports.limits;
    if (!shared) return undefined;
    const limits = limitsOf(model, shared.concurrency);
    return () => shared.limiter.acquire(model.slug, limits, abortSignalOf(signal));
  };
  /** One paid call: the caller's terms, the call's estimate, how it runs, and its result's usage. */
  const pay = <R extends { cost: number }>(
    model: ResolvedModel,
    options: Omit<ModelCallOptions, 'signal'> & { signal: CancelSignal },
    call: Pick<PaidCall<R>, 'estimate' | 'run'> & { usage: (r: R) => Usage | null; tokens: (r: R) => number },
  ) =>
    paidCall<R>(ports, {
      payer: options.payer,
      permit: permitOf(model, options.signal),
      admit: options.admit,
      refused: options.refused,
      estimate: call.estimate,
      run: () => {
        options.started?.();
        return call.run();
      },
      cost: (r) => r.cost,
      tokens: call.tokens,
      spent: options.spent && ((r, cost) => options.spent?.(call.usage(r), cost)),
    });
  /** The provider layer's options of a forwarded call. */
  const upstreamOf = (options: ForwardOptions): StreamCallOptions => ({
    ...options.upstream,
    signal: options.signal,
    projectId: options.payer.projectId,
  });
  /** A non-streamed call through the cache when the call names a policy and the process has one. */
  const viaCache = async (
    model: ResolvedModel,
    kind: EntryKind,
    request: ChatRequest,
    options: Pick<ModelCallOptions, 'payer' | 'cache'>,
    call: () => Promise<GatewayCompletion>,
  ): Promise<Cached<GatewayCompletion>> => {
    if (!options.cache || !ports.cache) return { value: await call(), outcome: null };
    const via = await ports.cache.complete(
      options.payer.projectId,
      model,
      kind,
      request,
      options.cache,
      call,
    );
    return { value: via.result, outcome: via.cache };
  };

  return {
    complete(model, request, options) {
      const { signal, payer } = options;
      const provider = () => ports.providers.complete(model, request, { signal, projectId: payer.projectId });
      return pay<CompletionResult>(model, options, {
        estimate: maxCallCost(model, request),
        run: () =>
          options.cache && ports.cache
            ? viaCache(model, 'chat', request, options, provider).then((c) => c.value)
            : provider(),
        usage: (r) => r.usage,
        tokens: (r) => totalTokens(r.usage),
      });
    },
    embed(model, input, options) {
      return pay<EmbeddingsResult>(model, options, {
        estimate: maxEmbeddingsCost(model, { input }),
        run: () => embedTexts(ports.providers, model, input, options.signal),
        usage: (r) => r.usage,
        tokens: (r) => r.usage?.prompt_tokens ?? 0,
      });
    },
    async forward(model, request, options) {
      const upstream = upstreamOf(options);
      const provider = () => ports.providers.complete(model, request, upstream);
      const answer = await pay<Cached<GatewayCompletion> & { cost: number }>(model, options, {
        estimate: maxCallCost(model, request, options.requestText),
        run: async () => {
          const via = await viaCache(model, options.kind ?? 'chat', request, options, provider);
          return { ...via, cost: via.value.cost };
        },
        usage: (r) => r.value.usage,
        tokens: (r) => totalTokens(r.value.usage),
      });
      return { value: answer.value, outcome: answer.outcome };
    },
    stream(model, request, options, consume) {
      const { stream } = ports.providers;
      if (!stream) throw new TypeError('this model caller has no streaming provider layer');
      const upstream = upstreamOf(options);
      const open = () => stream(model, request, upstream);
      return pay(model, options, {
        estimate: maxCallCost(model, request, options.requestText),
        run: async () => {
          const policy = options.cache;
          if (!policy || !ports.cache) return consume({ value: await open(), outcome: null });
          const via = await ports.cache.stream(options.payer.projectId, model, request, policy, open);
          return consume({ value: via.stream, outcome: via.cache });
        },
        usage: (r) => r.usage,
        tokens: (r) => totalTokens(r.usage),
      });
    },
    async embedRequest(model, request, options) {
      const provider = () => ports.providers.embed(model, request, upstreamOf(options));
      const answer = await pay<Cached<GatewayCompletion> & { cost: number }>(model, options, {
        estimate: maxEmbeddingsCost(model, request, options.requestText),
        run: async () => {
          const via = await viaCache(model, 'embeddings', request as ChatRequest, options, provider);
          return { ...via, cost: via.value.cost };
        },
        usage: (r) => r.value.usage,
        tokens: (r) => r.value.usage?.prompt_tokens ?? 0,
      });
      return { value: answer.value, outcome: answer.outcome };
    },
  };
}
