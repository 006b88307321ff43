import type { FastifyReply, FastifyRequest } from 'fastify';
import { principalOf } from '../auth/guard.js';
import { createModelCaller, type ModelCaller } from '../llm/call-model.js';
import { DIALECTS } from '../llm/dialects/registry.js';
import { HOP_HEADER, hopsOf } from '../llm/hop.js';
import type { RateDecision, RateLimiter } from '../ratelimit/limiter.js';
import type { SpendGuard } from '../shared/budget.js';
import { ApiError } from '../shared/errors.js';
import {
  CONTAINER_HEADER,
  FALLBACK_HEADER,
  fallbacksOf,
  headerValue,
  LOG_ID_HEADER,
} from './call-headers.js';
import {
  cancellerFor,
  failedCall,
  type GatewayCall,
  type InferencePorts,
  plainCall,
  type RunningCall,
  recordedCallOf,
  resolveCall,
  streamedCall,
} from './call-steps.js';
import type { Gateway } from './containers.js';
import { guardStepOf } from './guard-step.js';

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
export { callError, type GatewayCall, type GatewayRoute, type InferencePorts } from './call-steps.js';

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

export interface CallRunner {
  gateway: Gateway;
  /** The one model call every route's upstream call goes through. */
  caller: ModelCaller;
  /** The project's guard policies (the embeddings route runs their input stage itself). */
  guards?: InferencePorts['guards'];
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
export function createCallRunner(deps: InferencePorts, gateway: Gateway): CallRunner {
  const { hopId } = deps;
  // The one model call: the budget's reservation, the response cache, the provider layer, the settlement.
  const caller = createModelCaller({ providers: deps.providers, budgets: deps.budgets, cache: deps.cache });
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
    const startedAt = Date.now();
    if (where.logId) reply.header(LOG_ID_HEADER, where.logId);
    const controller = cancellerFor(req, reply);
    const context = recordedCallOf(req, spec, where, projectId, startedAt);
    // Set when the budget refused the call: nothing was called, nothing is recorded.
    const budget = { refused: false };
    const running: RunningCall = {
      deps,
      caller,
      gateway,
      req,
      reply,
      spec,
      projectId,
      startedAt,
      call: {
        signal: controller,
        fallbacks: fallbacksOf(req.headers[FALLBACK_HEADER]),
        resolveFallback: (slug) => gateway.model(projectId, slug),
        beforeRetry: () => chargeAttempt(deps.limiter, keyId),
        hops,
        // Streams keep what they send only when it is to be recorded.
        collect: context !== null,
      },
      base: { ...spec.metadata, ...spec.extra, route: spec.route },
      input: DIALECTS[spec.route].internal ? undefined : spec.request.messages,
      paid: {
        payer: { projectId, keyId },
        refused: async () => void Object.assign(budget, { refused: true }),
      },
      budget,
      record: (outcome) => {
        if (!context) return;
        // The verdicts reached so far, as on the task log's metadata (`guards`).
        if (running.guard) outcome.guards = running.guard.notes();
        gateway.record(context, outcome);
      },
    };
    try {
      running.guard = await guardStepOf(deps.guards, {
        projectId,
        keyId,
        ...where,
        request: spec.request,
        native: spec.native,
        base: running.base,
      });
      await running.guard?.before(() => controller.abort());
      const resolved = await resolveCall(running);
      return spec.request.stream === true
        ? await streamedCall(running, resolved, context)
        : await plainCall(running, resolved);
    } catch (err) {
      return failedCall(running, running.guard ? running.guard.failure(err) : err);
    } finally {
      running.guard?.finish();
    }
  }

  return { gateway, caller, budgets: deps.budgets, checkHops, prepare, run, guards: deps.guards };
}
