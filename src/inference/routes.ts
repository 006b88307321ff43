import type { OutgoingHttpHeaders, ServerResponse } from 'node:http';
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { FastifyReply } from 'fastify';
import { principalOf } from '../auth/guard.js';
import type { Deps } from '../deps.js';
import { responses } from '../http/schemas.js';
import { ApiError } from '../shared/errors.js';
import { CallCanceller } from './cancel.js';
import { type CallOutcome, createGateway, type RecordedCall } from './gateway.js';
import { HOP_HEADER, hopsOf } from './hop.js';
import { CallAbortedError, type ProviderLayer, type StreamCallOptions } from './provider-layer.js';
import { ChatCompletion, ChatCompletionRequest } from './schemas.js';
import type { ChatRequest } from './types.js';

export const COST_HEADER = 'X-Evalgate-Cost';
export const LOG_ID_HEADER = 'X-Evalgate-Log-Id';
export const CONTAINER_HEADER = 'x-evalgate-container';
export const FALLBACK_HEADER = 'x-evalgate-fallback-models';

/** USD as a plain decimal (never exponent notation), e.g. `0.00001234`. */
export function formatCost(usd: number): string {
  if (!(usd > 0)) return '0';
  const plain = String(usd);
  if (!plain.includes('e')) return plain;
  return usd.toFixed(12).replace(/0+$/, '').replace(/\.$/, '');
}

function headerValue(value: string | string[] | undefined): string | null {
  const v = Array.isArray(value) ? value[0] : value;
  return v === undefined || v.trim() === '' ? null : v.trim();
}

function fallbacksOf(value: string | string[] | undefined): string[] | undefined {
  const v = headerValue(value);
  if (v === null) return undefined;
  return v
    .split(',')
    .map((s) => s.trim())
    .filter((s) => s !== '');
}

function errorOf(err: unknown): { code: string; message: string } {
  if (err instanceof ApiError) return { code: err.code, message: err.message };
  if (err instanceof CallAbortedError) return { code: err.code, message: err.message };
  return { code: 'internal_error', message: 'Internal error' };
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

/** `POST /v1/chat/completions`: the OpenAI-compatible gateway, recorded as task logs. */
export const inferenceRoutes: FastifyPluginAsyncTypebox<{ deps: Deps }> = async (app, { deps }) => {
  const { providers, config, hopId } = deps;
  const gateway = createGateway({
    db: deps.db,
    logWriter: deps.logWriter,
    recording: config.recording,
    modelCacheMs: config.modelCacheMs,
    resolveModel: deps.resolveModel,
  });

  app.post(
    '/v1/chat/completions',
    {
      config: { permission: 'inference:write' },
      schema: {
        tags: ['inference'],
        summary: 'Create a chat completion (OpenAI-compatible; streamed with stream: true)',
        description:
          'Routes the call to the model named by `model` (openai/<name>, anthropic/<name> or a registered ' +
          'model) and records it as a task log of the container named by X-Evalgate-Container (id or ' +
          "label; default: the project's `default` container). X-Evalgate-Fallback-Models: comma-separated " +
          'slugs tried when the model is unavailable. Every answer carries X-Evalgate-Cost (USD; a trailer ' +
          'for streams) and X-Evalgate-Log-Id (when recorded). Upstream requests carry X-Evalgate-Hop (the ' +
          'Evalgate deployments they passed through); a request that already passed through this one is ' +
          'a loop and answers 508 loop_detected.',
        body: ChatCompletionRequest,
        response: responses({ 200: ChatCompletion }, 404, 413, 415, 422, 508),
      },
    },
    async (req, reply) => {
      const { projectId } = principalOf(req);
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
      const request = req.body as ChatRequest;
      const startedAt = Date.now();
      const containerId = await gateway.container(projectId, headerValue(req.headers[CONTAINER_HEADER]));
      const logId = containerId === null ? null : gateway.newLogId();
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
          ? { logId, projectId, containerId, request, requestText: req.bodyText, startedAt }
          : null;
      const call: StreamCallOptions = {
        signal: controller,
        fallbacks: fallbacksOf(req.headers[FALLBACK_HEADER]),
        resolveFallback: (slug) => gateway.model(projectId, slug),
        hops,
        // Streams keep what they send only when it is to be recorded.
        collect: context !== null,
      };
      const record = (outcome: CallOutcome) => {
        if (context) gateway.record(context, outcome);
      };

      try {
        const model = await gateway.model(projectId, request.model);
        if (request.stream === true) return await streamed(reply, model, request, call, record);
        const result = await providers.complete(model, request, call);
        reply.header(COST_HEADER, formatCost(result.cost)).type('application/json').send(result.bodyText);
        // Recorded once the answer is on its way.
        record({
          model: request.model,
          output: result.text,
          responseText: result.bodyText,
          usage: result.usage,
          latencyMs: result.latencyMs,
          cost: result.cost,
          error: null,
          metadata: { stream: false, served_by: result.servedBy, attempts: result.attempts },
        });
        return reply;
      } catch (err) {
        record({
          model: request.model,
          output: null,
          usage: null,
          latencyMs: Date.now() - startedAt,
          cost: 0,
          error: errorOf(err),
          metadata: { stream: request.stream === true },
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
    },
  );

  async function streamed(
    reply: FastifyReply,
    model: Parameters<ProviderLayer['stream']>[0],
    request: ChatRequest,
    call: StreamCallOptions,
    record: (outcome: CallOutcome) => void,
  ): Promise<FastifyReply> {
    // Failures before the first byte throw from here and are answered as ordinary errors.
    const stream = await providers.stream(model, request, call);
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
    const result = await stream.pipe({
      write: (frames) => raw.destroyed || raw.write(frames),
      drained: () => writable(raw),
      end: (last, { cost }) => {
        if (raw.destroyed) return;
        raw.addTrailers([[COST_HEADER, formatCost(cost)]]);
        if (last === null) raw.end();
        else raw.end(last);
      },
    });
    record({
      model: request.model,
      output: null,
      responseSse: result.sse,
      usage: result.usage,
      latencyMs: result.latencyMs,
      cost: result.cost,
      error: result.error,
      metadata: { stream: true, served_by: result.servedBy, attempts: result.attempts },
    });
    return reply;
  }
};
