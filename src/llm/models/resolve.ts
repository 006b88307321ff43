import type { Kysely } from 'kysely';
import type { Config } from '../../config.js';
import type { Database } from '../../db/schema.js';
import { decryptSecret } from '../../shared/crypto.js';
import { ApiError } from '../../shared/errors.js';
import { type JsonObject, parseJson } from '../../shared/json.js';
import { FRONTIER_PROVIDERS, type FrontierProvider, type PriceTable } from './prices.js';
import * as repo from './repository.js';
import type { ProviderKind, ResolvedModel } from './types.js';

/** What model resolution needs: the registry, the operator's providers, and the key that seals credentials. */
export interface ModelContext {
  db: Kysely<Database>;
  config: Config;
  secretKey: Buffer;
  /** The price table (the operator's EVALGATE_PRICES_FILE, or the bundled one), read once at start. */
  prices: PriceTable;
}

export { FRONTIER_PROVIDERS };

export function isFrontierProvider(prefix: string): prefix is FrontierProvider {
  return (FRONTIER_PROVIDERS as readonly string[]).includes(prefix);
}

export function frontierKind(provider: FrontierProvider): ProviderKind {
  return provider === 'openai' ? 'openai-compatible' : provider;
}

/** `openai/<name>` → ['openai', '<name>']; null when the slug has no known provider prefix. */
export function splitFrontierSlug(slug: string): [FrontierProvider, string] | null {
  const cut = slug.indexOf('/');
  if (cut <= 0) return null;
  const prefix = slug.slice(0, cut);
  return isFrontierProvider(prefix) ? [prefix, slug.slice(cut + 1)] : null;
}

function notFound(ref: string): ApiError {
  return new ApiError('model_not_found', `Model '${ref}' not found`, { model: ref });
}

function resolveFrontier(
  ctx: ModelContext,
  ref: string,
  provider: FrontierProvider,
  name: string,
): ResolvedModel {
  const settings = ctx.config.providers[provider];
  if (!settings.apiKey) {
    throw new ApiError(
      'provider_not_configured',
      `Provider '${provider}' is not enabled on this server (the operator sets ${provider.toUpperCase()}_API_KEY)`,
      { provider },
    );
  }
  // Any name under an enabled provider is accepted: the provider is the judge of its own catalogue.
  const price = ctx.prices.find(provider, name);
  return {
    slug: ref,
    modelId: null,
    provider: frontierKind(provider),
    // OpenAI itself speaks the Responses API: such calls go to it natively.
    api: provider === 'openai' ? 'responses' : 'chat',
    baseUrl: settings.baseUrl,
    upstreamModel: name,
    apiKey: settings.apiKey,
    inputPricePerMtok: price?.inputPerMtok ?? null,
    outputPricePerMtok: price?.outputPerMtok ?? null,
    defaultParameters: {},
    fallbacks: [],
    // The operator's own base URL is trusted; only project-registered upstreams are re-checked.
    checkAddress: false,
    limits: { rpm: null, tpm: null },
  };
}

/**
 * Everything needed to call a model named `ref`: `openai/<name>`, `anthropic/<name>` or `gemini/<name>`
 * (the operator's credentials, only ever sent to the operator's base URLs), or a registered model's label
 * or id.
 * Throws 400 `provider_not_configured` or 404 `model_not_found`.
 */
export async function resolveModel(
  ctx: ModelContext,
  projectId: string,
  ref: string,
): Promise<ResolvedModel> {
  const frontier = splitFrontierSlug(ref);
  if (frontier) {
    const [provider, name] = frontier;
    if (name === '') throw notFound(ref);
    return resolveFrontier(ctx, ref, provider, name);
  }
  if (ref.includes('/')) throw notFound(ref);
  const row = await repo.findModel(ctx.db, projectId, ref);
  if (!row) throw notFound(ref);
  let apiKey: string | null = null;
  if (row.api_key_encrypted !== null) {
    try {
      apiKey = decryptSecret(ctx.secretKey, row.api_key_encrypted, row.id);
    } catch {
      // Sealed under another secret key (EVALGATE_SECRET_KEY changed): unusable until registered again.
      throw new ApiError(
        'upstream_unavailable',
        `The credential of model '${row.label}' cannot be decrypted with this server's secret key; set its api_key again`,
        { model: row.label },
      );
    }
  }
  return {
    slug: ref,
    modelId: row.id,
    provider: row.provider,
    api: row.api,
    baseUrl: row.base_url,
    upstreamModel: row.upstream_model,
    apiKey,
    inputPricePerMtok: row.input_price_per_mtok,
    outputPricePerMtok: row.output_price_per_mtok,
    defaultParameters: parseJson<JsonObject>(row.default_parameters, {}),
    fallbacks: parseJson<string[]>(row.fallbacks, []),
    checkAddress: true,
    limits: { rpm: row.rpm_limit, tpm: row.tpm_limit },
    cacheTtlSeconds: row.cache_ttl_seconds ?? null,
  };
}
