import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { RateLimiter } from '../ratelimit/limiter.js';
import { ApiError } from '../shared/errors.js';
import type { Authenticator, Principal } from './authenticator.js';
import { grants } from './permissions.js';
import './request-types.js';

/**
 * The Authorization header; on routes whose dialect names a header of its own (Anthropic's SDK sends the
 * key as `x-api-key`), that header too (as a bearer credential) when no Authorization header came.
 */
function credentialOf(request: FastifyRequest): string | undefined {
  const { authorization } = request.headers;
  const own = request.routeOptions.config?.dialect?.credentialHeader ?? null;
  if (authorization !== undefined || own === null) return authorization;
  const key = request.headers[own];
  const value = Array.isArray(key) ? key[0] : key;
  return value === undefined ? undefined : `Bearer ${value}`;
}

/**
 * Every route that names a permission: authenticate the key (401), spend from its rate budget (429,
 * with the four headers on every response), then check the permission (403).
 */
export function installGuard(
  app: FastifyInstance,
  auth: Authenticator,
  limiter: RateLimiter,
  keyConcurrency: number,
): void {
  /** Requests of each key in progress in this process. */
  const inFlight = new Map<string, number>();
  app.decorateRequest('principal', null);
  app.addHook('onRequest', async (request, reply) => {
    const permission = request.routeOptions.config?.permission;
    if (!permission) return;
    const principal = await auth.authenticate(credentialOf(request));
    request.principal = principal;
    const held = inFlight.get(principal.keyId) ?? 0;
    if (held >= keyConcurrency) {
      throw new ApiError(
        'rate_limit_exceeded',
        `This API key has ${keyConcurrency} requests in progress, the most allowed at once; retry when one ends`,
        { reason: 'concurrency', limit: keyConcurrency, retry_after: 1 },
        [],
        { 'Retry-After': '1' },
      );
    }
    inFlight.set(principal.keyId, held + 1);
    reply.raw.once('close', () => {
      const left = (inFlight.get(principal.keyId) ?? 1) - 1;
      if (left <= 0) inFlight.delete(principal.keyId);
      else inFlight.set(principal.keyId, left);
    });
    await takeRateLimit(limiter, principal.keyId, reply);
    if (!grants(principal.permissions, permission)) {
      throw new ApiError('permission_denied', `This API key lacks the '${permission}' permission`, {
        required: permission,
      });
    }
  });
}

/** The caller of a guarded route. */
export function principalOf(request: FastifyRequest): Principal {
  if (!request.principal) throw new ApiError('invalid_api_key', 'Missing API key');
  return request.principal;
}

/**
 * One request of a key against its rate limit: the limit's headers on the reply, and 429 when it is spent
 * (503 when the limiter cannot be asked). The API's guard and the MCP endpoint count requests alike.
 */
export async function takeRateLimit(limiter: RateLimiter, keyId: string, reply: FastifyReply): Promise<void> {
  let decision: Awaited<ReturnType<RateLimiter['take']>>;
  try {
    decision = await limiter.take(`key:${keyId}`);
  } catch {
    throw new ApiError('upstream_unavailable', 'The rate limiter is unavailable; try again shortly', {
      dependency: 'redis',
    });
  }
  reply.header('X-RateLimit-Limit', decision.limit);
  reply.header('X-RateLimit-Remaining', decision.remaining);
  reply.header('X-RateLimit-Reset', decision.resetAt);
  if (!decision.allowed) {
    throw new ApiError(
      'rate_limit_exceeded',
      `Rate limit exceeded; retry in ${decision.retryAfter} s`,
      { retry_after: decision.retryAfter },
      [],
      { 'Retry-After': String(decision.retryAfter) },
    );
  }
}
