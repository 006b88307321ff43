import type { FastifyReply, FastifyRequest } from 'fastify';
import { principalOf } from '../auth/guard.js';
import {
  CACHE_HEADER,
  CACHE_TTL_HEADER,
  type CacheOutcome,
  type CachePolicy,
  cachePolicy,
} from '../llm/cache/cache.js';
import type { ResolvedModel } from '../llm/models/types.js';
import type { JsonObject } from '../shared/json.js';

function header(req: FastifyRequest, name: string): string | null {
  const raw = req.headers[name.toLowerCase()];
  const value = Array.isArray(raw) ? raw[0] : raw;
  return value === undefined || value.trim() === '' ? null : value.trim();
}

/**
 * How a gateway call uses the cache: its `X-Evalgate-Cache` / `X-Evalgate-Cache-Ttl` headers, else the
 * key's and then the model's default TTL (400 for a header value it does not know).
 */
export function gatewayCachePolicy(req: FastifyRequest, model: ResolvedModel): CachePolicy | null {
  return cachePolicy(
    { mode: header(req, CACHE_HEADER), ttl: header(req, CACHE_TTL_HEADER) },
    principalOf(req).cacheTtlSeconds,
    model.cacheTtlSeconds,
  );
}

/** The task log's cache fields (`cache`: hit or miss, `saved_usd`), none for an uncached call. */
export function cacheMetadata(outcome: CacheOutcome | null): JsonObject {
  return outcome === null ? {} : { cache: outcome.status, saved_usd: outcome.savedUsd };
}

/** Answers `X-Evalgate-Cache: hit|miss` for a cached call. */
export function cacheHeader(reply: FastifyReply, outcome: CacheOutcome | null): void {
  if (outcome !== null) reply.header(CACHE_HEADER, outcome.status);
}
