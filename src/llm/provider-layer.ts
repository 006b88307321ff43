import { performance } from 'node:perf_hooks';
import { ApiError } from '../shared/errors.js';
import { isObject } from '../shared/json.js';
import type { NativeProtocol } from '../shared/wire-protocol.js';
import type { CancelSignal } from './cancel.js';
import { ANSWER_RULES, DIALECTS } from './dialects/registry.js';
import { hopHeader } from './hop.js';
import type { ResolvedModel } from './models/types.js';
import { checkAnswer, createTransport, finish, invalidAnswer, readJson } from './provider-transport.js';
import { PROVIDERS } from './providers/index.js';
import { completionText, readUsage } from './providers/openai-compatible.js';
import type { JsonObject, ProviderAdapter } from './providers/types.js';
import { callResiliently, type RetryPolicy } from './resilience.js';
import { checkStreamStart } from './stream-check.js';
import { type ChatStream, costOf, GatewayStream } from './stream-pump.js';
import type { ChatRequest, CompletionResult, ProviderCaller } from './types.js';
import type { Upstream, UpstreamStats } from './upstream.js';
import { CallAbortedError, UpstreamError } from './upstream-errors.js';

export interface ProviderLayerOptions {
  upstream: Upstream;
  policy: RetryPolicy;
  /** Resolves the fallback slugs of callers that name their project (evaluation runs). */
  resolveModel?: (projectId: string, ref: string) => Promise<ResolvedModel>;
  /** This deployment's hop id (`hopIdOf(pepper)`), sent in X-Evalgate-Hop on every upstream request. */
  hopId?: string;
}

export interface CallOptions {
  /** An AbortSignal, or a CallCanceller (cheaper; what the gateway route uses). */
  signal?: CancelSignal | undefined;
  /** The caller's project, so that registered fallback labels can be resolved. */
  projectId?: string | undefined;
  /** Replaces the model's own fallbacks (the gateway's `X-Evalgate-Fallback-Models`). */
  fallbacks?: readonly string[] | undefined;
  resolveFallback?: ((slug: string) => Promise<ResolvedModel>) | undefined;
  /**
   * `responses` / `messages`: the request is a Responses-API body (as the internal request, with no
   * messages) or an Anthropic Messages body, for a model whose upstream speaks that API; its answer's
   * bytes are kept (`bodyText`, the stream's events).
   */
  api?: NativeProtocol | undefined;
  /** The Evalgate deployments the incoming request came through (its X-Evalgate-Hop): ours is added. */
  hops?: readonly string[] | undefined;
  /** Called before every upstream attempt after the first (the gateway charges the key's rate limit). */
  beforeRetry?: (() => Promise<void>) | undefined;
}

export interface StreamCallOptions extends CallOptions {
  /** Keep the event stream as sent, for `result().sse` (needed to record the call). */
  collect?: boolean;
}

/** A non-streamed call's outcome, with the body as JSON text ready to send. */
export interface GatewayCompletion extends CompletionResult {
  /** The upstream's own bytes when it needed no translation, else the translated body serialized. */
  bodyText: string;
  attempts: number;
  /** The model name the upstream that answered was given. */
  upstreamModel: string;
  /** The task log's output (`recordedOutput` of the body), when already known: a cache hit keeps it. */
  output?: string;
}

export interface ProviderLayer extends ProviderCaller {
  complete(model: ResolvedModel, request: ChatRequest, options?: CallOptions): Promise<GatewayCompletion>;
  /** Resolves once an upstream answered 2xx (after retries and fallbacks); earlier failures throw ApiError. */
  stream(model: ResolvedModel, request: ChatRequest, options?: StreamCallOptions): Promise<ChatStream>;
  /**
   * `POST /messages/count_tokens` of an Anthropic upstream: the request's input tokens as the upstream
   * counts them (free; retried, no fallbacks).
   */
  countTokens(model: ResolvedModel, request: JsonObject, options?: CallOptions): Promise<number>;
  /** `POST /embeddings` of an OpenAI-compatible upstream (other providers: 400), priced by input tokens. */
  embed(model: ResolvedModel, request: JsonObject, options?: CallOptions): Promise<GatewayCompletion>;
  upstreamStats(): UpstreamStats;
  close(): Promise<void>;
}

/** `bodyText` is `text`, or when null (translated, renamed) the body serialised on first read, once. */
function withBodyText(fields: Omit<GatewayCompletion, 'bodyText'>, text: string | null): GatewayCompletion {
  if (text !== null) return { ...fields, bodyText: text };
  let serialised: string | null = null;
  const get = () => (serialised ??= JSON.stringify(fields.body));
  return Object.defineProperty(fields as GatewayCompletion, 'bodyText', { enumerable: true, get });
}

/** An embeddings answer's usage: its prompt tokens (nothing else is counted). */
function embeddingsUsage(raw: unknown) {
  const prompt = isObject(raw) && typeof raw.prompt_tokens === 'number' ? raw.prompt_tokens : 0;
  return { prompt_tokens: prompt, completion_tokens: 0, total_tokens: prompt };
}

/** The input tokens a count-tokens answer gives; anything else is an invalid answer. */
function countedTokens(adapter: ProviderAdapter, json: JsonObject): number {
  const tokens = json.input_tokens;
  if (typeof tokens !== 'number' || !Number.isInteger(tokens) || tokens < 0)
    throw UpstreamError.invalidAnswer(
      'the upstream answered without input_tokens',
      adapter.errorMessage(json),
    );
  return tokens;
}

/**
 * The provider layer: one function to call any resolved model, streamed or not, with retries,
 * back-off and fallbacks. The HTTP gateway and evaluation runs (judges, generation) both call it;
 * it records nothing (the gateway route does).
 */
export function createProviderLayer(options: ProviderLayerOptions): ProviderLayer {
  const { upstream, policy, hopId } = options;
  const transport = createTransport(upstream, hopId);
  const hopOf = (call: CallOptions) => (hopId === undefined ? null : hopHeader(call.hops, hopId));

  function fallbackResolver(call: CallOptions): ((slug: string) => Promise<ResolvedModel>) | null {
    if (call.resolveFallback) return call.resolveFallback;
    const { resolveModel } = options;
    // Without a project only frontier slugs resolve; registered labels are then skipped as not found.
    const projectId = call.projectId ?? '';
    return resolveModel ? (slug) => resolveModel(projectId, slug) : null;
  }

  /** Attempts of `model` then its fallbacks (the call's own, else the model's), retried under the policy. */
  function resiliently<T>(
    model: ResolvedModel,
    call: CallOptions,
    attempt: (m: ResolvedModel) => Promise<T>,
  ) {
    return callResiliently({
      first: model,
      fallbacks: call.fallbacks ?? model.fallbacks,
      resolveFallback: fallbackResolver(call),
      beforeRetry: call.beforeRetry,
      policy,
      signal: call.signal,
      attempt,
    });
  }

  /** One embeddings attempt of `m` (OpenAI-compatible upstreams only). */
  async function embedOnce(m: ResolvedModel, request: JsonObject, call: CallOptions, hop: string | null) {
    const adapter = PROVIDERS[m.provider];
    if (adapter?.kind !== 'openai-compatible') {
      throw new ApiError(
        'bad_request',
        `Model '${m.slug}' has no embeddings endpoint (OpenAI-compatible models only)`,
        {
          model: m.slug,
        },
      );
    }
    const target = transport.target('embeddings', m, '/embeddings');
    const body = JSON.stringify({ ...request, model: m.upstreamModel });
    const response = await transport.send(adapter, m, target, body, call.signal, hop);
    const read = await readJson(response, call.signal);
    checkAnswer(adapter, read.json, 'embeddings');
    return { model: m, ...read };
  }

  return {
    async complete(model, request, call = {}) {
      const t0 = performance.now();
      const hop = hopOf(call);
      const { value, attempts } = await resiliently(model, call, async (m) =>
        finish(await transport.start(m, request, false, call.signal, hop, call.api), call.signal),
      );
      const usage = readUsage(value.body.usage);
      return withBodyText(
        {
          body: value.body,
          text: completionText(value.body),
          usage,
          cost: costOf(value.started.model, usage),
          latencyMs: performance.now() - t0,
          servedBy: value.started.model.slug,
          upstreamModel: value.started.model.upstreamModel,
          attempts,
        },
        value.bodyText,
      );
    },

    async stream(model, request, call = {}) {
      const t0 = performance.now();
      const hop = hopOf(call);
      // A stream counts as started once its first events arrived and parse (else: retried, as a 5xx).
      const { value, attempts } = await resiliently(model, call, async (m) => {
        const started = await transport.start(m, request, true, call.signal, hop, call.api);
        const rules = ANSWER_RULES[started.adapter.protocol];
        const check = (event: JsonObject) =>
          invalidAnswer(started.adapter, event, rules.streamStartProblem(event));
        return { ...started, response: await checkStreamStart(started.response, check) };
      });
      return new GatewayStream(value, attempts, t0, call.collect ?? false, call.signal);
    },

    async embed(model, request, call = {}) {
      const t0 = performance.now();
      const hop = hopOf(call);
      const { value, attempts } = await resiliently(model, call, (m) => embedOnce(m, request, call, hop));
      const usage = embeddingsUsage(value.json.usage);
      return {
        body: value.json,
        bodyText: value.text,
        text: '',
        usage,
        cost: costOf(value.model, usage),
        latencyMs: performance.now() - t0,
        servedBy: value.model.slug,
        upstreamModel: value.model.upstreamModel,
        attempts,
      };
    },

    async countTokens(model, request, call = {}) {
      const hop = hopOf(call);
      const adapter = PROVIDERS[model.provider];
      if (!adapter || !DIALECTS[adapter.protocol].countsTokens)
        throw new ApiError('bad_request', `Model '${model.slug}' has no token counting endpoint`);
      const { value } = await callResiliently({
        first: model,
        fallbacks: [],
        resolveFallback: null,
        policy,
        signal: call.signal,
        attempt: async (m) => {
          const target = transport.target('count', m, `${adapter.chatPath}/count_tokens`);
          const body = JSON.stringify({ ...request, model: m.upstreamModel });
          const { json } = await readJson(
            await transport.send(adapter, m, target, body, call.signal, hop),
            call.signal,
          );
          return countedTokens(adapter, json);
        },
      });
      return value;
    },

    upstreamStats: () => upstream.stats(),
    close: () => upstream.close(),
  };
}

export { applyDefaults } from './provider-transport.js';
export type { ChatStream, FrameSink, StreamResult } from './stream-pump.js';
export { CallAbortedError, costOf };
