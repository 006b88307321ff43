import { ApiError } from '../shared/errors.js';
import type { NativeProtocol } from '../shared/wire-protocol.js';
import type { CancelSignal } from './cancel.js';
import { ANSWER_RULES, DIALECTS, NATIVE_ADAPTERS } from './dialects/registry.js';
import { HOP_HEADER } from './hop.js';
import type { ResolvedModel } from './models/types.js';
import { PROVIDERS } from './providers/index.js';
import type { CallContext, JsonObject, ProviderAdapter } from './providers/types.js';
import type { Started } from './stream-pump.js';
import type { ChatRequest } from './types.js';
import type { Upstream, UpstreamTarget } from './upstream.js';
import type { UpstreamResponse } from './upstream-call.js';
import { transportFailure, UpstreamError, upstreamHttpError } from './upstream-errors.js';

/**
 * The provider layer's single attempt: one upstream request of one model (its target and headers kept per
 * resolved model), read and checked against its dialect's success rule. Retries and fallbacks are the
 * layer's (`provider-layer.ts`).
 */

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
export function invalidAnswer(
  adapter: ProviderAdapter,
  body: JsonObject,
  problem: string | null,
): UpstreamError | null {
  return problem === null ? null : UpstreamError.invalidAnswer(problem, adapter.errorMessage(body));
}

/** Throws the upstream error of an answer that is not a successful one of the upstream's dialect. */
export function checkAnswer(adapter: ProviderAdapter, body: JsonObject, protocol = adapter.protocol): void {
  const error = invalidAnswer(adapter, body, ANSWER_RULES[protocol].answerProblem(body));
  if (error) throw error;
}

/** An answer's body as JSON and as its text; unreadable or not an object: retryable. */
export async function readJson(
  response: UpstreamResponse,
  signal: CancelSignal | undefined,
): Promise<{ json: JsonObject; text: string }> {
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

/** A non-streamed answer read, checked and translated; `bodyText` null when the body is no longer its bytes. */
export interface FinishedAnswer {
  started: Started;
  body: Record<string, unknown>;
  bodyText: string | null;
}

/** Reads a started non-streamed call's answer, checks it and translates it to a chat completion. */
export async function finish(started: Started, signal: CancelSignal | undefined): Promise<FinishedAnswer> {
  const { json, text } = await readJson(started.response, signal);
  checkAnswer(started.adapter, json);
  const translated = started.adapter.responseBody(json, started.ctx);
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

/**
 * The paths a model is called on besides its chat path, each target kept per resolved model (`stream`:
 * the streamed call's own path, where the adapter's streamed calls have one).
 */
type TargetKind = 'chat' | 'stream' | 'responses' | 'embeddings' | 'count';

export interface Transport {
  /** One upstream request; a 4xx/5xx answer or a transport failure throws the upstream error it means. */
  send(
    adapter: ProviderAdapter,
    model: ResolvedModel,
    target: UpstreamTarget,
    body: string,
    signal: CancelSignal | undefined,
    hop: string | null,
  ): Promise<UpstreamResponse>;
  /** The upstream target of `model` for `path`, built once per resolved model and kind. */
  target(kind: TargetKind, model: ResolvedModel, path: string): UpstreamTarget;
  /** Sends a chat request (or a native one, `api`) to the model's upstream; answers once it replied 2xx. */
  start(
    model: ResolvedModel,
    request: ChatRequest,
    stream: boolean,
    signal: CancelSignal | undefined,
    hop: string | null,
    api: NativeProtocol | undefined,
  ): Promise<Started>;
}

export function createTransport(upstream: Upstream, hopId: string | undefined): Transport {
  // Resolved models are cached by the gateway, so the same object comes back call after call.
  const targets: Record<TargetKind, WeakMap<ResolvedModel, UpstreamTarget>> = {
    chat: new WeakMap(),
    stream: new WeakMap(),
    responses: new WeakMap(),
    embeddings: new WeakMap(),
    count: new WeakMap(),
  };
  /** Per model, the upstream request headers with this deployment's hop alone (a request that came through no other). */
  const ownHopHeaders = new WeakMap<ResolvedModel, Record<string, string>>();

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

  const transport: Transport = {
    target(kind, model, path) {
      let target = targets[kind].get(model);
      if (!target) {
        target = upstream.target(model.baseUrl, path, model.checkAddress);
        targets[kind].set(model, target);
      }
      return target;
    },

    async send(adapter, model, target, body, signal, hop) {
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
    },

    async start(model, request, stream, signal, hop, api) {
      const adapter = api === undefined ? PROVIDERS[model.provider] : NATIVE_ADAPTERS[api];
      if (!adapter) throw new ApiError('provider_not_configured', `Unknown provider '${model.provider}'`);
      const ctx: CallContext = {
        model,
        request: applyDefaults(model, request),
        clientWantsUsage:
          stream && (request.stream_options as JsonObject | undefined)?.include_usage === true,
      };
      const body = JSON.stringify(adapter.requestBody(ctx, stream));
      // The native Responses API has its own path; Anthropic's and Gemini's native calls share the adapter's.
      const target = transport.target(
        api !== undefined && DIALECTS[api].native.ownPath
          ? 'responses'
          : adapter.callPath && stream
            ? 'stream'
            : 'chat',
        model,
        adapter.callPath?.(model, stream) ?? adapter.chatPath,
      );
      const response = await transport.send(adapter, model, target, body, signal, hop);
      return { model, adapter, ctx, response };
    },
  };
  return transport;
}
