import { performance } from 'node:perf_hooks';
import { ApiError } from '../../shared/errors.js';
import { isObject, type JsonObject } from '../../shared/json.js';
import { assembleCompletion } from '../assemble.js';
import { DIALECTS } from '../dialects/registry.js';
import type { ResolvedModel } from '../models/types.js';
import type { GatewayCompletion } from '../provider-layer.js';
import { completionText } from '../providers/openai-compatible.js';
import { ssePayloads } from '../sse.js';
import type { ChatStream, StreamResult } from '../stream-pump.js';
import type { ChatRequest } from '../types.js';
import { HotEntries, type HotEntry } from './hot.js';
import { cacheKey, type EntryKind } from './key.js';
import { ReplayStream } from './replay.js';
import { storableAnswer, storableStream } from './storable.js';
import type { CacheEntry, CacheStore } from './store.js';

/** Request header: `use` (answer from the cache, fill it on a miss), `refresh` (call, overwrite) or `off`. */
export const CACHE_HEADER = 'X-Evalgate-Cache';
/** Request header: the TTL (seconds) of an entry this call writes. */
export const CACHE_TTL_HEADER = 'X-Evalgate-Cache-Ttl';
/** An entry's lifetime when neither the request, the key nor the model says. */
export const DEFAULT_CACHE_TTL_SECONDS = 86_400;
/** The longest TTL accepted (30 days). */
export const MAX_CACHE_TTL_SECONDS = 2_592_000;

export type CacheMode = 'use' | 'refresh';

/** How one call uses the cache. */
export interface CachePolicy {
  mode: CacheMode;
  ttlSeconds: number;
}

/** What the cache did for a call: answered it (`hit`, saving `savedUsd`) or not (`miss`, then filled). */
export interface CacheOutcome {
  status: 'hit' | 'miss';
  savedUsd: number;
}

/** A call's cache settings as sent: the `X-Evalgate-Cache` and `X-Evalgate-Cache-Ttl` header values. */
export interface CacheRequest {
  mode: string | null;
  ttl: string | null;
}

function ttlOf(raw: string): number {
  const ttl = Number(raw);
  if (!Number.isInteger(ttl) || ttl < 1 || ttl > MAX_CACHE_TTL_SECONDS) {
    throw new ApiError(
      'bad_request',
      `${CACHE_TTL_HEADER} must be a whole number of seconds from 1 to ${MAX_CACHE_TTL_SECONDS}, got '${raw}'`,
      { header: CACHE_TTL_HEADER },
    );
  }
  return ttl;
}

/**
 * Whether and how a call uses the cache: the request's header decides (`off` refuses even a default);
 * without it, a TTL on the API key, else on the registered model, opts its calls in. Null: not cached.
 * An unknown header value is refused with 400.
 */
export function cachePolicy(
  asked: CacheRequest,
  keyTtl: number | null | undefined,
  modelTtl: number | null | undefined,
): CachePolicy | null {
  const mode = asked.mode?.toLowerCase() ?? null;
  if (mode !== null && mode !== 'use' && mode !== 'refresh' && mode !== 'off') {
    throw new ApiError('bad_request', `${CACHE_HEADER} must be use, refresh or off, got '${asked.mode}'`, {
      header: CACHE_HEADER,
    });
  }
  const ttl = asked.ttl === null ? null : ttlOf(asked.ttl);
  if (mode === 'off') return null;
  const defaultTtl = keyTtl ?? modelTtl ?? null;
  if (mode === null && defaultTtl === null) return null;
  return { mode: mode ?? 'use', ttlSeconds: ttl ?? defaultTtl ?? DEFAULT_CACHE_TTL_SECONDS };
}

function parsed(text: string): JsonObject | null {
  try {
    const value: unknown = JSON.parse(text);
    return isObject(value) ? value : null;
  } catch {
    return null;
  }
}

/**
 * The response cache: exact matches on project, resolved model and canonical request (`cacheKey`).
 * It wraps a call: on a hit the stored answer comes back at cost 0 (its original cost as saved); on a
 * miss (or `refresh`) the call is made and its successful answer stored for the policy's TTL.
 */
export class ResponseCache {
  /** Entries read or written lately, answered from without asking the store or checking them again. */
  private readonly hot = new HotEntries();

  constructor(private readonly store: CacheStore) {}

  /**
   * The entry under `key`, checked: from memory when read or written lately, else from the store (an
   * entry an earlier version kept of a failed call is not answered from), then held in memory.
   */
  private async lookup(projectId: string, key: string, kind: EntryKind): Promise<HotEntry | null> {
    const known = this.hot.get(key);
    if (known) return known;
    const entry = await this.store.get(projectId, key);
    const body = entry && parsed(entry.bodyText);
    if (!entry || !body || !storableAnswer(kind, body)) return null;
    return this.hot.put(key, entry, DIALECTS[kind].internal ? completionText(body) : '', entry.expiresAt);
  }

  /** Stores a checked entry and holds it in memory for the next hits. */
  private async keep(projectId: string, key: string, entry: CacheEntry, text: string, ttlSeconds: number) {
    await this.store.set(projectId, key, entry, ttlSeconds);
    this.hot.put(key, entry, text, Date.now() + ttlSeconds * 1000);
  }

  /**
   * A non-streamed call (chat completion, a native body, or embeddings) through the cache. A hit answers
   * the stored bytes as they are (`bodyText`), parsed only when a reader asks for `body`.
   */
  async complete(
    projectId: string,
    model: ResolvedModel,
    kind: EntryKind,
    request: ChatRequest,
    policy: CachePolicy,
    call: () => Promise<GatewayCompletion>,
  ): Promise<{ result: GatewayCompletion; cache: CacheOutcome }> {
    const t0 = performance.now();
    const key = cacheKey(projectId, model, kind, request);
    if (policy.mode === 'use') {
      const hot = await this.lookup(projectId, key, kind);
      if (hot) {
        const { entry } = hot;
        let body: JsonObject | null = null;
        const result: GatewayCompletion = {
          get body() {
            body ??= hot.body();
            return body;
          },
          set body(value: JsonObject) {
            body = value;
          },
          bodyText: entry.bodyText,
          text: hot.text,
          output: hot.output(),
          usage: entry.usage,
          cost: 0,
          latencyMs: performance.now() - t0,
          servedBy: entry.servedBy,
          upstreamModel: entry.upstreamModel,
          attempts: 0,
        };
        return { result, cache: { status: 'hit', savedUsd: entry.cost } };
      }
    }
    const result = await call();
    // Only a success is kept: an upstream failure answered with 200 must not outlive the failure.
    if (storableAnswer(kind, result.body)) {
      const entry: CacheEntry = {
        bodyText: result.bodyText,
        usage: result.usage,
        cost: result.cost,
        servedBy: result.servedBy,
        upstreamModel: result.upstreamModel,
      };
      await this.keep(projectId, key, entry, DIALECTS[kind].internal ? result.text : '', policy.ttlSeconds);
    }
    return { result, cache: { status: 'miss', savedUsd: 0 } };
  }

  /**
   * A streamed chat call through the cache: a hit replays the stored completion as chunks; a miss
   * streams from the upstream and stores the completion the stream amounted to once it ended well.
   * Entries are shared with non-streamed calls of the same request.
   */
  async stream(
    projectId: string,
    model: ResolvedModel,
    request: ChatRequest,
    policy: CachePolicy,
    call: () => Promise<ChatStream>,
  ): Promise<{ stream: ChatStream; cache: CacheOutcome }> {
    const t0 = performance.now();
    const key = cacheKey(projectId, model, DIALECTS.chat.name, request);
    if (policy.mode === 'use') {
      const hot = await this.lookup(projectId, key, DIALECTS.chat.name);
      if (hot) {
        const options = request.stream_options;
        const includeUsage = isObject(options) && options.include_usage === true;
        return {
          stream: new ReplayStream(hot.entry, hot.frames(includeUsage), t0),
          cache: { status: 'hit', savedUsd: hot.entry.cost },
        };
      }
    }
    const upstream = await call();
    const kept = (result: StreamResult): { entry: CacheEntry; text: string } | null => {
      // Kept once the stream ended well: no error, and a generation that said it finished.
      const payloads = result.error === null && result.sse !== '' ? ssePayloads(result.sse) : null;
      if (payloads === null || !storableStream(payloads)) return null;
      const completion = assembleCompletion(payloads, upstream.servedBy);
      completion.usage = result.usage;
      const entry: CacheEntry = {
        bodyText: JSON.stringify(completion),
        usage: result.usage,
        cost: result.cost,
        servedBy: result.servedBy,
        upstreamModel: upstream.upstreamModel,
      };
      return { entry, text: completionText(completion) };
    };
    const { hot, store } = this;
    const stream: ChatStream = {
      servedBy: upstream.servedBy,
      upstreamModel: upstream.upstreamModel,
      async pipe(sink) {
        const keeping: { value: { entry: CacheEntry; text: string } | null } = { value: null };
        const result = await upstream.pipe({
          write: (frames) => sink.write(frames),
          drained: () => sink.drained(),
          end: (frames, outcome) => {
            // Held in memory before the client has the end of its answer, which it may repeat at once.
            keeping.value = kept(outcome);
            if (keeping.value) {
              hot.put(key, keeping.value.entry, keeping.value.text, Date.now() + policy.ttlSeconds * 1000);
            }
            sink.end(frames, outcome);
          },
        });
        if (keeping.value !== null) {
          const { entry, text } = keeping.value;
          await store.set(projectId, key, entry, policy.ttlSeconds);
          // Held again from when the store has it.
          hot.put(key, entry, text, Date.now() + policy.ttlSeconds * 1000);
        }
        return result;
      },
      result: () => upstream.result(),
    };
    return { stream, cache: { status: 'miss', savedUsd: 0 } };
  }

  close(): Promise<void> {
    this.hot.clear();
    return this.store.close();
  }
}
