import type { OutgoingHttpHeaders, ServerResponse } from 'node:http';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { callTrace } from '../capture/traceparent.js';
import type { GuardRuntime } from '../guards/runtime.js';
import { sendError } from '../http/error-handler.js';
import type { CachePolicy, ResponseCache } from '../llm/cache/cache.js';
import type { ForwardOptions, ModelCaller } from '../llm/call-model.js';
import { CallCanceller } from '../llm/cancel.js';
import type { DialectAnswer, NativeCall, StreamEncoder } from '../llm/dialect-types.js';
import { DIALECTS } from '../llm/dialects/registry.js';
import { translatingSink } from '../llm/dialects/stream-sink.js';
import type { ResolvedModel } from '../llm/models/types.js';
import type { PaidCall } from '../llm/paid-call.js';
import {
  CallAbortedError,
  type FrameSink,
  type ProviderLayer,
  type StreamCallOptions,
  type StreamResult,
} from '../llm/provider-layer.js';
import type { ChatCompletion } from '../llm/providers/types.js';
import { recordedOutput } from '../llm/recorded-output.js';
import type { ChatRequest } from '../llm/types.js';
import type { RateLimiter } from '../ratelimit/limiter.js';
import type { SpendGuard } from '../shared/budget.js';
import { ApiError, type ErrorBody, errorOf } from '../shared/errors.js';
import type { JsonObject } from '../shared/json.js';
import type { WireProtocol } from '../shared/wire-protocol.js';
import { cacheHeader, cacheMetadata, gatewayCachePolicy } from './cache-hook.js';
import { COST_HEADER, formatCost, sessionKeyOf, UPSTREAM_MODEL_HEADER } from './call-headers.js';
import type { CallOutcome, Gateway, GatewayOptions, RecordedCall } from './containers.js';
import type { GuardStep } from './guard-step.js';

/*
 * The steps of one gateway call (the call runner puts them together): the model resolved, the call streamed
 * or answered whole, a failure recorded; each writes its task log and its answer.
 */

/** The routes of the gateway, one per client dialect; kept on every task log as `metadata.route`. */
export type GatewayRoute = WireProtocol;

/** One call through the gateway, as a route decoded it. */
export interface GatewayCall {
  route: GatewayRoute;
  /** The call in the internal shape (chat-completion messages, tools, response format, parameters). */
  request: ChatRequest;
  /** The body as the client sent it (stored as the task log's request); null: the internal request is. */
  requestText: string | null;
  /** The client's metadata (request field and header), kept on the task log. */
  metadata: JsonObject;
  /** How the answer is written; null: the chat-completion answer as it is (the chat route). */
  answer: DialectAnswer | null;
  /** The task log id, when the route needs it before the call (e.g. as the response id). */
  logId?: string | null;
  /** Extra task-log metadata of the route (e.g. `store: false`). */
  extra?: JsonObject;
  /** How the call goes to a model whose upstream speaks the route's dialect (`model.api`). */
  native?: NativeCall;
  /** The stored prompt version the request was rendered from. */
  prompt?: { id: string; version: number } | undefined;
}

/** What the gateway's routes need: the provider layer, this deployment's hop id and the recorder's parts. */
export interface InferencePorts {
  providers: ProviderLayer;
  hopId: string;
  gateway: GatewayOptions;
  /** The per-key rate limiter: a call's retries and fallbacks spend from the key's budget too. */
  limiter: Pick<RateLimiter, 'take'>;
  /** The response cache (`X-Evalgate-Cache`, the key's and the model's TTL). */
  cache?: ResponseCache;
  /** Spend limits of the key and the project (429 `budget_exceeded` before the upstream call). */
  budgets: SpendGuard;
  /** The project's guard policies (input, parallel and output checks); absent: no guards. */
  guards?: GuardRuntime;
}

/** A failed call's error as recorded: typed errors as they are, anything else without its internals. */
export function callError(err: unknown): ErrorBody {
  return errorOf(
    err,
    { code: 'internal_error', message: 'Internal error' },
    (e) => e instanceof ApiError || e instanceof CallAbortedError,
  );
}

/** Resolves on 'drain', or on 'close' so that a vanished client never leaves the writer waiting. */
function writable(raw: ServerResponse): Promise<void> {
  return new Promise((resolve) => {
    const done = () => {
      raw.off('drain', done);
      raw.off('close', done);
      resolve();
    };
    raw.on('drain', done);
    raw.on('close', done);
  });
}

/** One call as the runner carries it through its steps. */
export interface RunningCall {
  deps: InferencePorts;
  /** The one model call (budget, cache, provider layer), built once per runner. */
  caller: ModelCaller;
  gateway: Gateway;
  req: FastifyRequest;
  reply: FastifyReply;
  spec: GatewayCall;
  projectId: string;
  startedAt: number;
  /** The provider layer's options of the call (cancellation, fallbacks, retries, hops, collection). */
  call: StreamCallOptions & { signal: CallCanceller };
  /** The task log's metadata common to every outcome. */
  base: JsonObject;
  /** The task log's input, when the request is not already it. */
  input: ChatRequest['messages'] | undefined;
  /** The paid call's payer, and the flag its budget refusal sets. */
  paid: Pick<PaidCall<unknown>, 'payer' | 'refused'>;
  budget: { refused: boolean };
  record(outcome: CallOutcome): void;
  /** The call's guard checks, when a policy applies to it. */
  guard?: GuardStep | null;
}

/** The model call's state once the model is resolved: how it goes upstream and through the cache. */
interface ResolvedCall {
  model: ResolvedModel;
  native: NativeCall | null;
  upstreamRequest: ChatRequest;
  /** The cache policy of the call (null: not cached). */
  cache: CachePolicy | null;
}

/** A canceller that fires when the client goes away (or is already gone). */
export function cancellerFor(req: FastifyRequest, reply: FastifyReply): CallCanceller {
  const controller = new CallCanceller();
  const raw = reply.raw;
  raw.once('close', () => {
    if (!raw.writableFinished) controller.abort();
  });
  // Gone already (while the key was checked): nothing to call the upstream for.
  if (req.raw.socket?.destroyed) controller.abort();
  return controller;
}

/** What the task log of the call is written from (null when the call is not recorded). */
export function recordedCallOf(
  req: FastifyRequest,
  spec: GatewayCall,
  where: { containerId: string | null; logId: string | null },
  projectId: string,
  startedAt: number,
): RecordedCall | null {
  const { containerId, logId } = where;
  if (!logId || !containerId) return null;
  return {
    logId,
    projectId,
    containerId,
    request: spec.request,
    requestText: spec.requestText,
    startedAt,
    trace: callTrace(req.headers.traceparent),
    operation: DIALECTS[spec.route].operation,
    sessionKey: sessionKeyOf(req),
    ...(spec.prompt ? { prompt: spec.prompt } : {}),
  };
}

/**
 * The model, the way the call reaches it (natively or translated) and its cache policy: the request's
 * `X-Evalgate-Cache` headers (400 for a value it does not know), else the key's and the model's TTL. A
 * native stream is not cached (its events are the upstream's own); a cached stream is collected, to be
 * stored. A stream the guards must read (output or parallel checks) is translated even to an upstream that
 * speaks the route's dialect: the checks read chat-completion frames, and the route's encoder then writes
 * their redactions and error events in the client's dialect.
 */
export async function resolveCall(running: RunningCall): Promise<ResolvedCall> {
  const { spec, projectId, req, call } = running;
  const { request } = spec;
  const model = await running.gateway.model(projectId, request.model);
  const guarded = request.stream === true && running.guard?.watchesStream === true;
  const native = !guarded && spec.native?.accepts(model) ? spec.native : null;
  const upstreamRequest = native ? native.request : request;
  if (native) call.api = native.api;
  const nativeStream = native !== null && request.stream === true;
  const asked = gatewayCachePolicy(req, model);
  const cache = nativeStream || !running.deps.cache ? null : asked;
  if (cache) call.collect = true;
  return { model, native, upstreamRequest, cache };
}

/** The model call's terms of a gateway call: its payer, cancellation, provider options and cache. */
function forwardOptions(running: RunningCall, resolved: ResolvedCall): ForwardOptions {
  return {
    ...running.paid,
    signal: running.call.signal,
    requestText: running.spec.requestText,
    upstream: running.call,
    cache: resolved.cache,
  };
}

/** A streamed call: the events piped to the client as they come, then recorded. */
export async function streamedCall(
  running: RunningCall,
  resolved: ResolvedCall,
  context: RecordedCall | null,
) {
  const { reply, spec } = running;
  const { model, native, upstreamRequest } = resolved;
  const options = forwardOptions(running, resolved);
  if (context) options.started = () => running.gateway.begin(context);
  const { result, outcome } = await running.caller.stream(model, upstreamRequest, options, async (opened) => {
    cacheHeader(reply, opened.outcome);
    reply.header(UPSTREAM_MODEL_HEADER, opened.value.upstreamModel);
    const encoder = native ? native.stream() : (spec.answer?.stream() ?? null);
    const piped = await pipeStream(reply, opened.value, encoder, native ? null : running.guard);
    return { result: piped, outcome: opened.outcome, usage: piped.usage, cost: piped.cost };
  });
  const nativeAnswer = native && context ? native.recorded(result.sse, model) : null;
  running.record({
    model: spec.request.model,
    output: nativeAnswer ? recordedOutput(nativeAnswer) : null,
    input: running.input,
    ...(native ? { responseText: JSON.stringify(nativeAnswer) } : { responseSse: result.sse }),
    usage: result.usage,
    latencyMs: result.latencyMs,
    cost: result.cost,
    error: result.error,
    metadata: {
      ...running.base,
      ...cacheMetadata(outcome),
      stream: true,
      served_by: result.servedBy,
      attempts: result.attempts,
    },
  });
  return reply;
}

/** A non-streamed call: recorded (spooled) first, so that the log id its answer carries survives a kill. */
export async function plainCall(running: RunningCall, resolved: ResolvedCall) {
  const { reply, spec } = running;
  const { model, native, upstreamRequest } = resolved;
  const options = { ...forwardOptions(running, resolved), kind: native?.api ?? DIALECTS.chat.name };
  const { value: result, outcome } = await running.caller.forward(model, upstreamRequest, options);
  cacheHeader(reply, outcome);
  const answered = native
    ? native.plain(result.bodyText)
    : spec.answer
      ? spec.answer.plain(result.body as ChatCompletion, model)
      : result.bodyText;
  const guarded = await running.guard?.plain(answered, result.output ?? recordedOutput(result.body));
  running.record({
    model: spec.request.model,
    output: result.output ?? recordedOutput(result.body),
    input: running.input,
    // Already a chat completion's text unless the upstream answered natively in another dialect.
    responseText: native ? JSON.stringify(result.body) : result.bodyText,
    usage: result.usage,
    latencyMs: result.latencyMs,
    cost: result.cost,
    error: null,
    metadata: {
      ...running.base,
      ...cacheMetadata(outcome),
      stream: false,
      served_by: result.servedBy,
      attempts: result.attempts,
    },
  });
  reply.header(COST_HEADER, formatCost(result.cost)).header(UPSTREAM_MODEL_HEADER, result.upstreamModel);
  // An answer an output guard blocked is recorded as it came and answered as the guard's error.
  if (guarded?.blocked) return sendError(reply, guarded.blocked);
  reply.type('application/json').send(guarded ? guarded.body : answered);
  return reply;
}

/** A call that failed: recorded (unless the budget refused it), then answered, or dropped when aborted. */
export function failedCall(running: RunningCall, err: unknown): FastifyReply {
  const { reply, spec } = running;
  if (running.budget.refused) throw err;
  running.record({
    model: spec.request.model,
    output: null,
    input: running.input,
    usage: null,
    latencyMs: Date.now() - running.startedAt,
    cost: 0,
    error: callError(err),
    metadata: { ...running.base, stream: spec.request.stream === true },
  });
  if (err instanceof CallAbortedError) {
    // Nobody is left to answer.
    reply.hijack();
    reply.raw.destroy();
    return reply;
  }
  reply.header(COST_HEADER, '0');
  throw err;
}

export async function pipeStream(
  reply: FastifyReply,
  stream: Awaited<ReturnType<ProviderLayer['stream']>>,
  encoder: StreamEncoder | null,
  guard?: Pick<GuardStep, 'sink'> | null,
): Promise<StreamResult> {
  const raw = reply.raw;
  reply.hijack();
  // getHeaders() gives a fresh object (the guard's rate-limit headers, the log id): added to in place.
  const headers = reply.getHeaders() as OutgoingHttpHeaders;
  headers['content-type'] = 'text/event-stream; charset=utf-8';
  headers['cache-control'] = 'no-cache';
  headers['x-accel-buffering'] = 'no';
  headers.trailer = COST_HEADER;
  raw.writeHead(200, headers);
  // The frames that end the stream go out with the terminating chunk and the trailer in one write.
  const sink: FrameSink = {
    write: (frames) => raw.destroyed || raw.write(frames),
    drained: () => writable(raw),
    end: (last, { cost }) => {
      if (raw.destroyed) return;
      raw.addTrailers([[COST_HEADER, formatCost(cost)]]);
      if (last === null) raw.end();
      else raw.end(last);
    },
  };
  const out = encoder ? translatingSink(sink, encoder) : sink;
  return stream.pipe(guard ? guard.sink(out) : out);
}
