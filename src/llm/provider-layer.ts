import { performance } from 'node:perf_hooks';
import { ApiError } from '../shared/errors.js';
import { isObject } from '../shared/json.js';
import type { NativeProtocol } from '../shared/wire-protocol.js';
import type { CancelSignal } from './cancel.js';
import { ANSWER_RULES, DIALECTS, NATIVE_ADAPTERS } from './dialects/registry.js';
import { HOP_HEADER, hopHeader } from './hop.js';
import type { ResolvedModel } from './models/types.js';
import { PROVIDERS } from './providers/index.js';
import { completionText, readUsage } from './providers/openai-compatible.js';
import type { CallContext, JsonObject, ProviderAdapter } from './providers/types.js';
import { callResiliently, type RetryPolicy } from './resilience.js';
import { checkStreamStart } from './stream-check.js';
import { type ChatStream, costOf, GatewayStream, type Started } from './stream-pump.js';
import type { ChatRequest, CompletionResult, ProviderCaller } from './types.js';
import type { Upstream, UpstreamStats, UpstreamTarget } from './upstream.js';
import type { UpstreamResponse } from './upstream-call.js';
import { CallAbortedError, transportFailure, UpstreamError, upstreamHttpError } from './upstream-errors.js';

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

/**
 * The model's default parameters under the request's own (the request wins). A default `system`
 * (or `system_prompt`) becomes a leading system message when the request has none.
 */
export function applyDefaults(model: ResolvedModel, request: ChatRequest): ChatRequest {
  const defaults = model.defaultParameters;
  if (Object.keys(defaults).length === 0) return request;
  const { system, system_prompt: systemPrompt, ...parameters } = defaults;
  const out: ChatRequest = { ...parameters, ...request };
  const prompt = typeof system === 'string' ? system : systemPrompt;
  if (
    typeof prompt === 'string' &&
    !request.messages.some((m) => m.role === 'system' || m.role === 'developer')
  ) {
    out.messages = [{ role: 'system', content: prompt }, ...request.messages];
  }
  return out;
}

/** The error an answer that is not a successful one of its dialect means (null: it is one). */
function invalidAnswer(
  adapter: ProviderAdapter,
  body: JsonObject,
  problem: string | null,
): UpstreamError | null {
  return problem === null ? null : UpstreamError.invalidAnswer(problem, adapter.errorMessage(body));
}

/** Throws the upstream error of an answer that is not a successful one of the upstream's dialect. */
function checkAnswer(adapter: ProviderAdapter, body: JsonObject, protocol = adapter.protocol): void {
  const error = invalidAnswer(adapter, body, ANSWER_RULES[protocol].answerProblem(body));
  if (error) throw error;
}

/**
 * The provider layer: one function to call any resolved model, streamed or not, with retries,
 * back-off and fallbacks. The HTTP gateway and evaluation runs (judges, generation) both call it;
 * it records nothing (the gateway route does).
 */
export function createProviderLayer(options: ProviderLayerOptions): ProviderLayer {
  const { upstream, policy, hopId } = options;
  // Resolved models are cached by the gateway, so the same object comes back call after call.
  const targets = new WeakMap<ResolvedModel, UpstreamTarget>();
  /** Per model, the upstream request headers with this deployment's hop alone (a request that came through no other). */
  const ownHopHeaders = new WeakMap<ResolvedModel, Record<string, string>>();
  const embeddingTargets = new WeakMap<ResolvedModel, UpstreamTarget>();
  const responseTargets = new WeakMap<ResolvedModel, UpstreamTarget>();
  const countTargets = new WeakMap<ResolvedModel, UpstreamTarget>();

  function headersFor(adapter: ProviderAdapter, model: ResolvedModel, hop: string | null) {
    if (hop === null) return adapter.headers(model);
    if (hop !== hopId) return { ...adapter.headers(model), [HOP_HEADER]: hop };
    let headers = ownHopHeaders.get(model);
    if (!headers) {
      headers = { ...adapter.headers(model), [HOP_HEADER]: hop };
      ownHopHeaders.set(model, headers);
    }
    return headers;
  }

  function fallbackResolver(call: CallOptions): ((slug: string) => Promise<ResolvedModel>) | null {
    if (call.resolveFallback) return call.resolveFallback;
    const { resolveModel } = options;
    // Without a project only frontier slugs resolve; registered labels are then skipped as not found.
    const projectId = call.projectId ?? '';
    return resolveModel ? (slug) => resolveModel(projectId, slug) : null;
  }

  /** One upstream request; a 4xx/5xx answer or a transport failure throws the upstream error it means. */
  async function send(
    adapter: ProviderAdapter,
    model: ResolvedModel,
    target: UpstreamTarget,
    body: string,
    signal: CancelSignal | undefined,
    hop: string | null,
  ): Promise<UpstreamResponse> {
    let response: UpstreamResponse;
    try {
      response = await upstream.send(target, { headers: headersFor(adapter, model, hop), body, signal });
    } catch (err) {
      throw transportFailure(err, signal);
    }
    if (response.statusCode >= 400) {
      let text = '';
      try {
        text = await response.body.text();
      } catch (err) {
        throw transportFailure(err, signal);
      }
      throw upstreamHttpError(adapter, model, response.statusCode, response.headers, text);
    }
    return response;
  }

  async function start(
    model: ResolvedModel,
    request: ChatRequest,
    stream: boolean,
    signal: CancelSignal | undefined,
    hop: string | null,
    api: NativeProtocol | undefined,
  ): Promise<Started> {
    const adapter = api === undefined ? PROVIDERS[model.provider] : NATIVE_ADAPTERS[api];
    if (!adapter) throw new ApiError('provider_not_configured', `Unknown provider '${model.provider}'`);
    const ctx: CallContext = {
      model,
      request: applyDefaults(model, request),
      clientWantsUsage: stream && (request.stream_options as JsonObject | undefined)?.include_usage === true,
    };
    const body = JSON.stringify(adapter.requestBody(ctx, stream));
    // The native Responses API has its own path; Anthropic's native calls share the adapter's.
    const cache = api !== undefined && DIALECTS[api].native.ownPath ? responseTargets : targets;
    let target = cache.get(model);
    if (!target) {
      target = upstream.target(model.baseUrl, adapter.chatPath, model.checkAddress);
      cache.set(model, target);
    }
    const response = await send(adapter, model, target, body, signal, hop);
    return { model, adapter, ctx, response };
  }

  async function readJson(response: UpstreamResponse, signal: CancelSignal | undefined) {
    let text: string;
    try {
      text = await response.body.text();
    } catch (err) {
      throw transportFailure(err, signal);
    }
    let json: unknown;
    try {
      json = JSON.parse(text);
    } catch {
      throw UpstreamError.retryable('unreadable upstream response');
    }
    if (typeof json !== 'object' || json === null)
      throw UpstreamError.retryable('unreadable upstream response');
    return { json: json as JsonObject, text };
  }

  async function finish(started: Started, signal: CancelSignal | undefined) {
    let text: string;
    try {
      text = await started.response.body.text();
    } catch (err) {
      throw transportFailure(err, signal);
    }
    let json: unknown;
    try {
      json = JSON.parse(text);
    } catch {
      throw UpstreamError.retryable('unreadable upstream response');
    }
    if (typeof json !== 'object' || json === null)
      throw UpstreamError.retryable('unreadable upstream response');
    checkAnswer(started.adapter, json as JsonObject);
    const translated = started.adapter.responseBody(json as JsonObject, started.ctx);
    const body = (translated ?? json) as Record<string, unknown>;
    // A native answer (Responses, Messages) is relabelled where it is sent; its bytes stay the upstream's.
    if (started.adapter.nativeAnswer) return { started, body, bodyText: text };
    // A registered model's answer names it as the caller did (`local-good`), not by the upstream's own
    // name for it; an operator's frontier model keeps the provider's name (its dated snapshot).
    const renamed =
      started.model.modelId !== null && typeof body.model === 'string' && body.model !== started.model.slug;
    if (renamed) body.model = started.model.slug;
    // Serialised once, and only when a reader asks (the gateway sends it; a judge reads `text` only).
    return { started, body, bodyText: translated || renamed ? null : text };
  }

  /** `bodyText` is `text`, or when null (translated, renamed) the body serialised on first read, once. */
  function withBodyText(fields: Omit<GatewayCompletion, 'bodyText'>, text: string | null): GatewayCompletion {
    if (text !== null) return { ...fields, bodyText: text };
    let serialised: string | null = null;
    const get = () => (serialised ??= JSON.stringify(fields.body));
    return Object.defineProperty(fields as GatewayCompletion, 'bodyText', { enumerable: true, get });
  }

  return {
    async complete(model, request, call = {}) {
      const t0 = performance.now();
      const hop = hopId === undefined ? null : hopHeader(call.hops, hopId);
      const { value, attempts } = await callResiliently({
        first: model,
        fallbacks: call.fallbacks ?? model.fallbacks,
        resolveFallback: fallbackResolver(call),
        beforeRetry: call.beforeRetry,
        policy,
        signal: call.signal,
        attempt: async (m) => finish(await start(m, request, false, call.signal, hop, call.api), call.signal),
      });
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
      const hop = hopId === undefined ? null : hopHeader(call.hops, hopId);
      const { value, attempts } = await callResiliently({
        first: model,
        fallbacks: call.fallbacks ?? model.fallbacks,
        resolveFallback: fallbackResolver(call),
        beforeRetry: call.beforeRetry,
        policy,
        signal: call.signal,
        // A stream counts as started once its first events arrived and parse (else: retried, as a 5xx).
        attempt: async (m) => {
          const started = await start(m, request, true, call.signal, hop, call.api);
          const rules = ANSWER_RULES[started.adapter.protocol];
          const check = (event: JsonObject) =>
            invalidAnswer(started.adapter, event, rules.streamStartProblem(event));
          return { ...started, response: await checkStreamStart(started.response, check) };
        },
      });
      return new GatewayStream(value, attempts, t0, call.collect ?? false, call.signal);
    },

    async embed(model, request, call = {}) {
      const t0 = performance.now();
      const hop = hopId === undefined ? null : hopHeader(call.hops, hopId);
      const { value, attempts } = await callResiliently({
        first: model,
        fallbacks: call.fallbacks ?? model.fallbacks,
        resolveFallback: fallbackResolver(call),
        policy,
        signal: call.signal,
        beforeRetry: call.beforeRetry,
        attempt: async (m) => {
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
          let target = embeddingTargets.get(m);
          if (!target) {
            target = upstream.target(m.baseUrl, '/embeddings', m.checkAddress);
            embeddingTargets.set(m, target);
          }
          const body = JSON.stringify({ ...request, model: m.upstreamModel });
          const response = await send(adapter, m, target, body, call.signal, hop);
          const read = await readJson(response, call.signal);
          checkAnswer(adapter, read.json, 'embeddings');
          return { model: m, ...read };
        },
      });
      const raw = value.json.usage;
      const prompt = isObject(raw) && typeof raw.prompt_tokens === 'number' ? raw.prompt_tokens : 0;
      const usage = { prompt_tokens: prompt, completion_tokens: 0, total_tokens: prompt };
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
      const hop = hopId === undefined ? null : hopHeader(call.hops, hopId);
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
          let target = countTargets.get(m);
          if (!target) {
            target = upstream.target(m.baseUrl, `${adapter.chatPath}/count_tokens`, m.checkAddress);
            countTargets.set(m, target);
          }
          const body = JSON.stringify({ ...request, model: m.upstreamModel });
          const { json } = await readJson(
            await send(adapter, m, target, body, call.signal, hop),
            call.signal,
          );
          const tokens = json.input_tokens;
          if (typeof tokens !== 'number' || !Number.isInteger(tokens) || tokens < 0)
            throw UpstreamError.invalidAnswer(
              'the upstream answered without input_tokens',
              adapter.errorMessage(json),
            );
          return tokens;
        },
      });
      return value;
    },

    upstreamStats: () => upstream.stats(),
    close: () => upstream.close(),
  };
}

export type { ChatStream, FrameSink, StreamResult } from './stream-pump.js';
export { CallAbortedError, costOf };
