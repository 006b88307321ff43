import { performance } from 'node:perf_hooks';
import type { ResolvedModel } from '../catalog/models/types.js';
import { ApiError } from '../shared/errors.js';
import type { CancelSignal } from './cancel.js';
import { HOP_HEADER, hopHeader } from './hop.js';
import { PROVIDERS } from './providers/index.js';
import { completionText, readUsage } from './providers/openai-compatible.js';
import {
  type CallContext,
  DONE,
  type JsonObject,
  type ProviderAdapter,
  type StreamTranslator,
  UpstreamStreamError,
} from './providers/types.js';
import { callResiliently, type RetryPolicy } from './resilience.js';
import { SseReader } from './sse.js';
import type { ChatRequest, CompletionResult, ProviderCaller, Usage } from './types.js';
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
  /** The Evalgate deployments the incoming request came through (its X-Evalgate-Hop): ours is added. */
  hops?: readonly string[] | undefined;
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
}

export interface StreamResult {
  /**
   * The event stream as the client received it, when the stream was collected ('' otherwise):
   * `assembleCompletion(ssePayloads(sse), …)` makes it one completion.
   */
  sse: string;
  usage: Usage | null;
  cost: number;
  latencyMs: number;
  servedBy: string;
  attempts: number;
  /** Set when the stream did not end normally (the client saw an error event, or went away). */
  error: { code: string; message: string } | null;
}

/** Where `pipe` sends a stream's frames. */
export interface FrameSink {
  /** False when the sink is full: reading pauses until `drained()` resolves. */
  write(frames: string | Buffer): boolean;
  drained(): Promise<void>;
  /** Called once, with the last frames (null when none are left) and the outcome: the stream is over. */
  end(frames: string | Buffer | null, result: StreamResult): void;
}

/**
 * A started stream. `pipe` sends its server-sent-event frames (`data: …\n\n`, `[DONE]` last) as the
 * upstream delivers them, as text or as the upstream's own bytes when they needed no change. It never
 * rejects: a failure after the start is sent as an error event and ends the stream.
 */
export interface ChatStream {
  readonly servedBy: string;
  /** Resolves with the stream's outcome (what `result()` gives) once it is over. */
  pipe(sink: FrameSink): Promise<StreamResult>;
  result(): StreamResult;
}

export interface ProviderLayer extends ProviderCaller {
  complete(model: ResolvedModel, request: ChatRequest, options?: CallOptions): Promise<GatewayCompletion>;
  /** Resolves once an upstream answered 2xx (after retries and fallbacks); earlier failures throw ApiError. */
  stream(model: ResolvedModel, request: ChatRequest, options?: StreamCallOptions): Promise<ChatStream>;
  upstreamStats(): UpstreamStats;
  close(): Promise<void>;
}

/** USD for the usage at the model's prices (unknown prices count as 0). */
export function costOf(model: ResolvedModel, usage: Usage | null): number {
  if (!usage) return 0;
  const input = model.inputPricePerMtok ?? 0;
  const output = model.outputPricePerMtok ?? 0;
  return (usage.prompt_tokens * input + usage.completion_tokens * output) / 1_000_000;
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

function errorFrame(code: string, message: string): string {
  return `data: ${JSON.stringify({ error: { code, message } })}\n\n`;
}

interface Started {
  model: ResolvedModel;
  adapter: ProviderAdapter;
  ctx: CallContext;
  response: UpstreamResponse;
}

/** Reads with these need the full parser (line ends to normalise, named events); plain searches, not a regex. */
function notPlain(text: string): boolean {
  return text.includes('\r') || text.includes('\nevent:') || text.startsWith('event:');
}

class GatewayStream implements ChatStream {
  /** The event-stream text the client was sent, when collecting. */
  private readonly sent: string[] = [];
  private readonly translator: StreamTranslator;
  private error: StreamResult['error'] = null;
  /** What the translator threw (an upstream error event): the stream ends after the frames before it. */
  private broken: unknown = null;
  private endedAt = 0;

  constructor(
    private readonly started: Started,
    private readonly attempts: number,
    private readonly startedAt: number,
    private readonly collect: boolean,
    private readonly signal: CancelSignal | undefined,
  ) {
    this.translator = started.adapter.streamTranslator(started.ctx);
  }

  get servedBy(): string {
    return this.started.model.slug;
  }

  /**
   * The frames for some events, or null when every event passes unchanged (the bytes can go as read).
   * An event the translator refuses ends them: `broken` is set, and only the frames before it are given.
   */
  private frames(events: ReturnType<SseReader['push']>, allowRaw: boolean): string | null {
    // Frames are only written out once some event changed (until then the read's own bytes will do).
    let out: string | null = allowRaw ? null : '';
    for (const [i, event] of events.entries()) {
      let payloads: string[] | null = null;
      try {
        payloads = this.translator.event(event);
      } catch (err) {
        this.broken = err;
      }
      const changed =
        payloads === null || payloads.length !== 1 || payloads[0] !== event.data || event.event !== null;
      if (out === null && changed) {
        out = '';
        for (let j = 0; j < i; j++) out += `data: ${events[j]!.data}\n\n`;
      }
      if (payloads === null) break;
      if (out !== null) for (const payload of payloads) out += `data: ${payload}\n\n`;
    }
    return out;
  }

  /** Keeps what goes to the client when the stream is collected; returns it. */
  private keep<T extends string | Buffer | null>(out: T, text?: string): T {
    if (this.collect && out !== null) this.sent.push(text ?? out.toString());
    return out;
  }

  /**
   * The pass-through fast path, for a read of whole plain events: the events before the first that
   * may carry usage or the end marker go as read, unparsed; only the rest are parsed. Undefined when
   * the read is not such a read.
   */
  private quick(reader: SseReader, bytes: Buffer): string | Buffer | null | undefined {
    const text = bytes.toString();
    if (!text.endsWith('\n\n') || notPlain(text)) return undefined;
    const special = text.search(this.translator.passThroughUnless!);
    if (special === -1) return this.keep(bytes, text);
    // The event that holds it starts after the blank line before it (or at the start of the read).
    const blank = text.lastIndexOf('\n\n', special);
    const start = blank === -1 ? 0 : blank + 2;
    const rest = this.frames(reader.pushText(start > 0 ? text.slice(start) : text), true);
    if (rest === null) return this.keep(bytes, text);
    const out = text.slice(0, start) + rest;
    return this.keep(out === '' ? null : out);
  }

  /** What one upstream read sends on: the bytes as read when no event in them changes, else frames (null: nothing). */
  private take(reader: SseReader, bytes: Buffer): string | Buffer | null {
    if (this.translator.passThroughUnless && reader.idle) {
      const quick = this.quick(reader, bytes);
      if (quick !== undefined) return quick;
    }
    // Upstream reads usually hold whole events: when nothing in them changes, send the bytes on.
    const aligned = reader.idle;
    const events = reader.push(bytes);
    const out = this.frames(events, aligned && reader.idle && events.length > 0);
    if (out === null) return this.keep(bytes);
    return this.keep(out === '' ? null : out);
  }

  /** The frames after the upstream's last byte: a last event without its blank line, and the end marker if missing. */
  private tail(reader: SseReader): string {
    const out = this.frames(reader.end(), false) ?? '';
    // A stream that ended cleanly but without its end marker is ended for the client.
    return this.keep(this.translator.done || this.broken ? out : `${out}data: ${DONE}\n\n`);
  }

  /** Records why the stream broke; the error event for the client, or null when the client is gone. */
  private fail(err: unknown): string | null {
    if (this.signal?.aborted) this.error = { code: 'client_disconnected', message: 'The client went away' };
    else if (err instanceof UpstreamStreamError) this.error = { code: err.code, message: err.message };
    else {
      this.error = {
        code: 'upstream_unavailable',
        message: `The upstream stream failed: ${transportFailure(err, undefined).message}`,
      };
    }
    return this.keep(this.signal?.aborted ? null : errorFrame(this.error.code, this.error.message));
  }

  /** The upstream is done with: its body is abandoned unless it ended (a stream that broke on an event). */
  private release(): void {
    this.endedAt = performance.now();
    this.started.response.body.destroy();
  }

  pipe(sink: FrameSink): Promise<StreamResult> {
    const body = this.started.response.body;
    const reader = new SseReader();
    // Once the end marker was read, what follows is held so that the end goes out in one write.
    let held: string | Buffer | null = null;
    const hold = (out: string | Buffer) => {
      held = held === null ? out : Buffer.concat([Buffer.from(held), Buffer.from(out)]);
    };
    return new Promise<StreamResult>((resolve) => {
      let settled = false;
      const finish = (last: string | null) => {
        if (settled) return;
        settled = true;
        this.release();
        if (last !== null && last !== '') hold(last);
        // Taken once: it joins the collected event stream.
        const result = this.result();
        sink.end(held, result);
        resolve(result);
      };
      body.consume({
        // The body hands over everything one upstream read brought: it goes out in one write.
        data: (bytes) => {
          const out = this.take(reader, bytes);
          if (this.broken) {
            // The frames before the refused event, then the error event, in the last write.
            if (out !== null) hold(out);
            finish(this.fail(this.broken));
          } else if (out === null) {
            return;
          } else if (this.translator.done) hold(out);
          else if (!sink.write(out)) {
            body.pause();
            void sink.drained().then(() => body.resume());
          }
        },
        end: () => {
          const tail = this.tail(reader);
          finish(this.broken ? `${tail}${this.fail(this.broken) ?? ''}` : tail);
        },
        error: (err) => finish(this.fail(err)),
      });
    });
  }

  result(): StreamResult {
    const { model } = this.started;
    const usage = this.translator.usage;
    return {
      sse: this.sent.join(''),
      usage,
      cost: costOf(model, usage),
      latencyMs: (this.endedAt || performance.now()) - this.startedAt,
      servedBy: model.slug,
      attempts: this.attempts,
      error: this.error,
    };
  }
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

  async function start(
    model: ResolvedModel,
    request: ChatRequest,
    stream: boolean,
    signal: CancelSignal | undefined,
    hop: string | null,
  ): Promise<Started> {
    const adapter = PROVIDERS[model.provider];
    if (!adapter) throw new ApiError('provider_not_configured', `Unknown provider '${model.provider}'`);
    const ctx: CallContext = {
      model,
      request: applyDefaults(model, request),
      clientWantsUsage: stream && (request.stream_options as JsonObject | undefined)?.include_usage === true,
    };
    const body = JSON.stringify(adapter.requestBody(ctx, stream));
    let target = targets.get(model);
    if (!target) {
      target = upstream.target(model.baseUrl, adapter.chatPath, model.checkAddress);
      targets.set(model, target);
    }
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
    return { model, adapter, ctx, response };
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
    const translated = started.adapter.responseBody(json as JsonObject, started.ctx);
    return {
      started,
      body: (translated ?? json) as Record<string, unknown>,
      bodyText: translated ? JSON.stringify(translated) : text,
    };
  }

  return {
    async complete(model, request, call = {}) {
      const t0 = performance.now();
      const hop = hopId === undefined ? null : hopHeader(call.hops, hopId);
      const { value, attempts } = await callResiliently({
        first: model,
        fallbacks: call.fallbacks ?? model.fallbacks,
        resolveFallback: fallbackResolver(call),
        policy,
        signal: call.signal,
        attempt: async (m) => finish(await start(m, request, false, call.signal, hop), call.signal),
      });
      const usage = readUsage(value.body.usage);
      return {
        body: value.body,
        bodyText: value.bodyText,
        text: completionText(value.body),
        usage,
        cost: costOf(value.started.model, usage),
        latencyMs: performance.now() - t0,
        servedBy: value.started.model.slug,
        attempts,
      };
    },

    async stream(model, request, call = {}) {
      const t0 = performance.now();
      const hop = hopId === undefined ? null : hopHeader(call.hops, hopId);
      const { value, attempts } = await callResiliently({
        first: model,
        fallbacks: call.fallbacks ?? model.fallbacks,
        resolveFallback: fallbackResolver(call),
        policy,
        signal: call.signal,
        attempt: (m) => start(m, request, true, call.signal, hop),
      });
      return new GatewayStream(value, attempts, t0, call.collect ?? false, call.signal);
    },

    upstreamStats: () => upstream.stats(),
    close: () => upstream.close(),
  };
}

export { CallAbortedError };
