import type { OutgoingHttpHeaders, ServerResponse } from 'node:http';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { principalOf } from '../auth/guard.js';
import { callTrace } from '../capture/traceparent.js';
import type { ResponseCache } from '../llm/cache/cache.js';
import { CallCanceller } from '../llm/cancel.js';
import type { DialectAnswer, NativeCall, StreamEncoder } from '../llm/dialect-types.js';
import { translatingSink } from '../llm/dialects/stream-sink.js';
import { maxCallCost } from '../llm/estimate.js';
import { HOP_HEADER, hopsOf } from '../llm/hop.js';
import { paidCall } from '../llm/paid-call.js';
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
import type { RateDecision, RateLimiter } from '../ratelimit/limiter.js';
import type { SpendGuard } from '../shared/budget.js';
import { ApiError, type ErrorBody, errorOf } from '../shared/errors.js';
import type { JsonObject } from '../shared/json.js';
import type { WireProtocol } from '../shared/wire-protocol.js';
import { cacheMetadata, gatewayCache } from './cache-hook.js';
import {
  CONTAINER_HEADER,
  COST_HEADER,
  FALLBACK_HEADER,
  fallbacksOf,
  formatCost,
  headerValue,
  LOG_ID_HEADER,
  sessionKeyOf,
  UPSTREAM_MODEL_HEADER,
} from './call-headers.js';
import type { CallOutcome, Gateway, GatewayOptions, RecordedCall } from './containers.js';

/** The routes of the gateway, one per client dialect; kept on every task log as `metadata.route`. */
export type GatewayRoute = WireProtocol;

export {
  CONTAINER_HEADER,
  COST_HEADER,
  clientMetadata,
  FALLBACK_HEADER,
  formatCost,
  headerValue,
  LOG_ID_HEADER,
  METADATA_HEADER,
  UPSTREAM_MODEL_HEADER,
} from './call-headers.js';

/**
 * Every upstream attempt after the first (a retry, a fallback) spends from the key's rate budget as a
 * request would; an exhausted budget ends the call with 429. A limiter that cannot answer does not stop it
 * (the request itself already passed the limiter).
 */
async function chargeAttempt(limiter: Pick<RateLimiter, 'take'>, keyId: string): Promise<void> {
  let decision: RateDecision;
  try {
    decision = await limiter.take(`key:${keyId}`);
  } catch {
    return;
  }
  if (decision.allowed) return;
  throw new ApiError(
    'rate_limit_exceeded',
    `Rate limit exceeded by this call's retries and fallbacks; retry in ${decision.retryAfter} s`,
    { retry_after: decision.retryAfter, reason: 'upstream_attempts' },
    [],
    { 'Retry-After': String(decision.retryAfter) },
  );
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

export interface CallRunner {
  gateway: Gateway;
  /** The key's and the project's budgets: checked before the upstream call, charged after it. */
  budgets: SpendGuard;
  /** Refuses a request that already passed through this deployment (508). */
  checkHops(req: FastifyRequest): string[];
  /** The container the call is recorded in, and its log id (both null when it is not recorded). */
  prepare(req: FastifyRequest): Promise<{ containerId: string | null; logId: string | null }>;
  run(
    req: FastifyRequest,
    reply: FastifyReply,
    call: GatewayCall,
    where: { containerId: string | null; logId: string | null },
  ): Promise<FastifyReply>;
}

/**
 * The one path every gateway route takes: hop check, container and log id, the provider layer (retries,
 * fallbacks, cancellation on disconnect), the answer in the route's dialect (streams translated event by
 * event) and one task log in one shape.
 */
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
}

export function createCallRunner(deps: InferencePorts, gateway: Gateway): CallRunner {
  const providers: ProviderLayer = deps.providers;
  const { hopId } = deps;
  function checkHops(req: FastifyRequest): string[] {
    // Read from the header each time (a route checks before its other work, `run` again): cheaper than
    // keeping each request's answer in a map.
    const hops = hopsOf(req.headers[HOP_HEADER]);
    // Sent by this deployment (or a replica): answering would call the same upstream again, without end.
    if (hops.includes(hopId)) {
      throw new ApiError(
        'loop_detected',
        'This request already passed through this Evalgate deployment (X-Evalgate-Hop): a model base URL ' +
          'leads back to the gateway, which would call itself without end',
        { hops },
      );
    }
    return hops;
  }

  async function prepare(req: FastifyRequest) {
    const { projectId } = principalOf(req);
    const containerId = await gateway.container(projectId, headerValue(req.headers[CONTAINER_HEADER]));
    return { containerId, logId: containerId === null ? null : gateway.newLogId() };
  }

  async function run(
    req: FastifyRequest,
    reply: FastifyReply,
    spec: GatewayCall,
    where: { containerId: string | null; logId: string | null },
  ): Promise<FastifyReply> {
    const { projectId, keyId } = principalOf(req);
    const hops = checkHops(req);
    const payer = { projectId, keyId };
    const { request } = spec;
    const startedAt = Date.now();
    const { containerId, logId } = where;
    if (logId) reply.header(LOG_ID_HEADER, logId);

    const controller = new CallCanceller();
    const raw = reply.raw;
    raw.once('close', () => {
      if (!raw.writableFinished) controller.abort();
    });
    // Gone already (while the key was checked): nothing to call the upstream for.
    if (req.raw.socket?.destroyed) controller.abort();
    const context: RecordedCall | null =
      logId && containerId
        ? {
            logId,
            projectId,
            containerId,
            request,
            requestText: spec.requestText,
            startedAt,
            trace: callTrace(req.headers.traceparent),
          }
        : null;
    if (context) context.sessionKey = sessionKeyOf(req);
    if (context && spec.prompt) context.prompt = spec.prompt;
    const call: StreamCallOptions = {
      signal: controller,
      fallbacks: fallbacksOf(req.headers[FALLBACK_HEADER]),
      resolveFallback: (slug) => gateway.model(projectId, slug),
      beforeRetry: () => chargeAttempt(deps.limiter, keyId),
      hops,
      // Streams keep what they send only when it is to be recorded.
      collect: context !== null,
    };
    const base: JsonObject = { ...spec.metadata, ...spec.extra, route: spec.route };
    const record = (outcome: CallOutcome) => {
      if (context) gateway.record(context, outcome);
    };
    const input = spec.route === 'chat' ? undefined : request.messages;
    // Set when the budget refused the call: nothing was called, nothing is recorded.
    const budget = { refused: false };
    const paid = { payer, refused: async () => void Object.assign(budget, { refused: true }) };

    try {
      const model = await gateway.model(projectId, request.model);
      const native = spec.native?.accepts(model) ? spec.native : null;
      const upstreamRequest = native ? native.request : request;
      if (native) call.api = native.api;
      const nativeStream = native !== null && request.stream === true;
      const cache = gatewayCache(deps.cache, req, reply, { projectId, model, nativeStream });
      if (cache.active) call.collect = true;
      const estimate = maxCallCost(model, upstreamRequest, spec.requestText);
      if (request.stream === true) {
        const { result, outcome } = await paidCall(deps, {
          ...paid,
          estimate,
          run: async () => {
            if (context) gateway.begin(context);
            const opened = await cache.stream(request, () => providers.stream(model, upstreamRequest, call));
            reply.header(UPSTREAM_MODEL_HEADER, opened.value.upstreamModel);
            const piped = await pipeStream(
              reply,
              opened.value,
              native ? native.stream() : (spec.answer?.stream() ?? null),
            );
            return { result: piped, outcome: opened.outcome };
          },
          cost: (r) => r.result.cost,
        });
        const nativeAnswer = native && context ? native.recorded(result.sse, model) : null;
        record({
          model: request.model,
          output: nativeAnswer ? recordedOutput(nativeAnswer) : null,
          input,
          ...(native ? { responseText: JSON.stringify(nativeAnswer) } : { responseSse: result.sse }),
          usage: result.usage,
          latencyMs: result.latencyMs,
          cost: result.cost,
          error: result.error,
          metadata: {
            ...base,
            ...cacheMetadata(outcome),
            stream: true,
            served_by: result.servedBy,
            attempts: result.attempts,
          },
        });
        return reply;
      }
      const { value: result, outcome } = await paidCall(deps, {
        ...paid,
        estimate,
        run: () =>
          cache.complete(native?.api ?? 'chat', upstreamRequest, () =>
            providers.complete(model, upstreamRequest, call),
          ),
        cost: (r) => r.value.cost,
      });
      const body = native
        ? native.plain(result.bodyText)
        : spec.answer
          ? spec.answer.plain(result.body as ChatCompletion, model)
          : result.bodyText;
      // Recorded (spooled) before the answer goes out, so that the log id it carries survives a kill.
      record({
        model: request.model,
        output: result.output ?? recordedOutput(result.body),
        input,
        // Already a chat completion's text unless the upstream answered natively in another dialect.
        responseText: native ? JSON.stringify(result.body) : result.bodyText,
        usage: result.usage,
        latencyMs: result.latencyMs,
        cost: result.cost,
        error: null,
        metadata: {
          ...base,
          ...cacheMetadata(outcome),
          stream: false,
          served_by: result.servedBy,
          attempts: result.attempts,
        },
      });
      reply
        .header(COST_HEADER, formatCost(result.cost))
        .header(UPSTREAM_MODEL_HEADER, result.upstreamModel)
        .type('application/json')
        .send(body);
      return reply;
    } catch (err) {
      if (budget.refused) throw err;
      record({
        model: request.model,
        output: null,
        input,
        usage: null,
        latencyMs: Date.now() - startedAt,
        cost: 0,
        error: callError(err),
        metadata: { ...base, stream: request.stream === true },
      });
      if (err instanceof CallAbortedError) {
        // Nobody is left to answer.
        reply.hijack();
        raw.destroy();
        return reply;
      }
      reply.header(COST_HEADER, '0');
      throw err;
    }
  }

  return { gateway, budgets: deps.budgets, checkHops, prepare, run };
}

async function pipeStream(
  reply: FastifyReply,
  stream: Awaited<ReturnType<ProviderLayer['stream']>>,
  encoder: StreamEncoder | null,
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
  return stream.pipe(encoder ? translatingSink(sink, encoder) : sink);
}
