import type { FastifyReply, FastifyRequest } from 'fastify';
import { principalOf } from '../auth/guard.js';
import {
  CACHE_HEADER,
  CACHE_TTL_HEADER,
  type CacheOutcome,
  type CachePolicy,
  cachePolicy,
  type ResponseCache,
} from '../llm/cache/cache.js';
import type { EntryKind } from '../llm/cache/key.js';
import type { ResolvedModel } from '../llm/models/types.js';
import type { GatewayCompletion } from '../llm/provider-layer.js';
import type { ChatStream } from '../llm/stream-pump.js';
import type { ChatRequest } from '../llm/types.js';
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

/** A non-streamed call through the cache when the policy says so, else straight. */
export async function completeVia(
  cache: ResponseCache | undefined,
  policy: CachePolicy | null,
  target: { projectId: string; model: ResolvedModel; kind: EntryKind; request: ChatRequest },
  call: () => Promise<GatewayCompletion>,
): Promise<{ result: GatewayCompletion; cache: CacheOutcome | null }> {
  if (!cache || policy === null) return { result: await call(), cache: null };
  return cache.complete(target.projectId, target.model, target.kind, target.request, policy, call);
}

/** A streamed chat call through the cache when the policy says so, else straight. */
export async function streamVia(
  cache: ResponseCache | undefined,
  policy: CachePolicy | null,
  target: { projectId: string; model: ResolvedModel; request: ChatRequest },
  open: () => Promise<ChatStream>,
): Promise<{ stream: ChatStream; cache: CacheOutcome | null }> {
  if (!cache || policy === null) return { stream: await open(), cache: null };
  return cache.stream(target.projectId, target.model, target.request, policy, open);
}

/** A call's answer as the cache gave it, with what the cache did (null: the call is not cached). */
export interface Cached<T> {
  value: T;
  outcome: CacheOutcome | null;
}

/** The cache as one gateway call uses it: its policy, and the call's answer through it. */
export interface GatewayCallCache {
  /** Whether the call is cached (a stream must then be collected, to be stored). */
  active: boolean;
  complete(
    kind: EntryKind,
    request: ChatRequest,
    call: () => Promise<GatewayCompletion>,
  ): Promise<Cached<GatewayCompletion>>;
  stream(request: ChatRequest, open: () => Promise<ChatStream>): Promise<Cached<ChatStream>>;
}

/**
 * The cache for one gateway call: the policy from the request (validated: 400), the key and the model;
 * the answer gets `X-Evalgate-Cache: hit|miss`, and the outcome comes back with the answer for the task
 * log's cache fields (`cacheMetadata`). A native stream is not cached (its events are the upstream's own).
 */
export function gatewayCache(
  cache: ResponseCache | undefined,
  req: FastifyRequest,
  reply: FastifyReply,
  call: { projectId: string; model: ResolvedModel; nativeStream: boolean },
): GatewayCallCache {
  const asked = gatewayCachePolicy(req, call.model);
  const policy = call.nativeStream ? null : asked;
  const { projectId, model } = call;
  return {
    active: cache !== undefined && policy !== null,
    async complete(kind, request, run) {
      const via = await completeVia(cache, policy, { projectId, model, kind, request }, run);
      cacheHeader(reply, via.cache);
      return { value: via.result, outcome: via.cache };
    },
    async stream(request, open) {
      const via = await streamVia(cache, policy, { projectId, model, request }, open);
      cacheHeader(reply, via.cache);
      return { value: via.stream, outcome: via.cache };
    },
  };
}
