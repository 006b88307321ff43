import { createHash } from 'node:crypto';
import type { WireProtocol } from '../../shared/wire-protocol.js';
import { DIALECTS } from '../dialects/registry.js';
import type { ResolvedModel } from '../models/types.js';
import { applyDefaults } from '../provider-layer.js';
import type { ChatRequest } from '../types.js';

/**
 * Request fields that do not change the answer, left out of the cache key: how it is delivered
 * (`stream`, `stream_options`), who asked and how it is labelled (`user`, `metadata`, `store`), and
 * the model name as the client wrote it (the resolved model is in the key instead).
 */
export const IGNORED_FIELDS: readonly string[] = [
  'model',
  'stream',
  'stream_options',
  'user',
  'metadata',
  'store',
];

/** What kind of answer an entry holds: a chat completion, an upstream's native body, or embeddings. */
export type EntryKind = WireProtocol;

/** JSON with object keys sorted at every depth (`undefined` members left out). */
export function canonicalJson(value: unknown): string {
  if (Array.isArray(value))
    return `[${value.map((v) => (v === undefined ? 'null' : canonicalJson(v))).join(',')}]`;
  if (value !== null && typeof value === 'object') {
    const entries = Object.entries(value as Record<string, unknown>).filter(([, v]) => v !== undefined);
    entries.sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonicalJson(v)}`).join(',')}}`;
  }
  return JSON.stringify(value) ?? 'null';
}

/**
 * The cache key of a call: SHA-256 over the project, the resolved model (registry id or frontier slug,
 * its upstream model name and base URL), the kind of answer, and the canonical request with the model's
 * default parameters applied and the ignored fields left out. Two projects never share a key.
 */
export function cacheKey(
  projectId: string,
  model: ResolvedModel,
  kind: EntryKind,
  request: ChatRequest,
): string {
  const withDefaults = DIALECTS[kind].internal ? applyDefaults(model, request) : request;
  const kept: Record<string, unknown> = {};
  for (const [field, value] of Object.entries(withDefaults)) {
    if (!IGNORED_FIELDS.includes(field)) kept[field] = value;
  }
  const identity = [projectId, model.modelId ?? model.slug, model.upstreamModel, model.baseUrl, kind];
  return createHash('sha256')
    .update(JSON.stringify(identity))
    .update('\n')
    .update(canonicalJson(kept))
    .digest('hex');
}
