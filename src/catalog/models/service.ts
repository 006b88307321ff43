import type { PriceEntry } from '../../llm/models/prices.js';
import * as repo from '../../llm/models/repository.js';
import {
  FRONTIER_PROVIDERS,
  frontierKind,
  type ModelContext,
  splitFrontierSlug,
} from '../../llm/models/resolve.js';
import type { UpstreamUrlCheck } from '../../llm/models/types.js';
import { encryptSecret, lastFour } from '../../shared/crypto.js';
import { ApiError, type ValidationIssue } from '../../shared/errors.js';
import { newId, nowIso } from '../../shared/ids.js';
import { type JsonObject, parseJson } from '../../shared/json.js';
import type { Model, ModelList, PatchModel, RegisterModel } from './schemas.js';

/**
 * Model context plus the upstream safety check of a base URL (the network policy, and the ports this
 * server listens on: a base URL that reaches the server itself is refused).
 */
export type RegistryContext = ModelContext & { checkUpstream: UpstreamUrlCheck };

const unixSeconds = (iso: string) => Math.floor(Date.parse(iso) / 1000);

export function toModel(row: repo.ModelRow): Model {
  return {
    id: row.label,
    object: 'model',
    created: unixSeconds(row.created_at),
    owned_by: row.project_id,
    kind: 'registered',
    model_id: row.id,
    label: row.label,
    provider: row.provider,
    base_url: row.base_url,
    upstream_model: row.upstream_model,
    has_api_key: row.api_key_encrypted !== null,
    api_key_last4: row.api_key_last4,
    input_price_per_mtok: row.input_price_per_mtok,
    output_price_per_mtok: row.output_price_per_mtok,
    context_window: row.context_window,
    default_parameters: parseJson<JsonObject>(row.default_parameters, {}),
    fallbacks: parseJson<string[]>(row.fallbacks, []),
    requests_per_minute: row.rpm_limit,
    tokens_per_minute: row.tpm_limit,
    api: row.api,
    cache_ttl_seconds: row.cache_ttl_seconds ?? null,
    price_as_of: null,
    price_source: null,
    metadata: parseJson<JsonObject>(row.metadata, {}),
    created_at: row.created_at,
    updated_at: row.updated_at,
  };
}

function frontierModel(provider: PriceEntry['provider'], name: string, price: PriceEntry | undefined): Model {
  return {
    id: `${provider}/${name}`,
    object: 'model',
    created: price ? unixSeconds(`${price.asOf}T00:00:00Z`) : 0,
    owned_by: provider,
    kind: 'frontier',
    model_id: null,
    label: null,
    provider: frontierKind(provider),
    base_url: null,
    upstream_model: name,
    has_api_key: true,
    api_key_last4: null,
    input_price_per_mtok: price?.inputPerMtok ?? null,
    output_price_per_mtok: price?.outputPerMtok ?? null,
    context_window: price?.contextWindow ?? null,
    default_parameters: {},
    fallbacks: [],
    requests_per_minute: null,
    tokens_per_minute: null,
    api: provider === 'openai' ? 'responses' : 'chat',
    cache_ttl_seconds: null,
    price_as_of: price?.asOf ?? null,
    price_source: price?.source ?? null,
    metadata: {},
    created_at: null,
    updated_at: null,
  };
}

/** Every model the project can use: the priced models of each enabled provider, then its registered ones. */
export async function listModels(ctx: ModelContext, projectId: string): Promise<ModelList> {
  const table = ctx.prices;
  const frontier = FRONTIER_PROVIDERS.filter((p) => ctx.config.providers[p].apiKey !== null).flatMap((p) =>
    table.entries.filter((e) => e.provider === p).map((e) => frontierModel(p, e.model, e)),
  );
  const registered = (await repo.listModels(ctx.db, projectId)).map(toModel);
  const data = [...frontier, ...registered];
  return { object: 'list', data, total: data.length };
}

async function requireRegistered(ctx: ModelContext, projectId: string, ref: string): Promise<repo.ModelRow> {
  const row = await repo.findModel(ctx.db, projectId, ref);
  if (!row) throw ApiError.notFound('Model', ref);
  return row;
}

/** A registered model by id or label, or a frontier slug of an enabled provider. */
export async function getModel(ctx: ModelContext, projectId: string, ref: string): Promise<Model> {
  const frontier = splitFrontierSlug(ref);
  if (!frontier) return toModel(await requireRegistered(ctx, projectId, ref));
  const [provider, name] = frontier;
  if (name === '' || ctx.config.providers[provider].apiKey === null) {
    throw new ApiError('model_not_found', `Model '${ref}' is not available on this server`, { model: ref });
  }
  return frontierModel(provider, name, ctx.prices.find(provider, name));
}

async function checkBaseUrl(ctx: RegistryContext, url: string): Promise<string> {
  const verdict = await ctx.checkUpstream(url);
  if (!verdict.ok)
    throw ApiError.invalid(['body', 'base_url'], `base_url refused: ${verdict.reason}`, 'upstream_refused');
  return url.replace(/\/+$/, '');
}

/** Each fallback must name a frontier model (`openai/…`, `anthropic/…`) or another registered model. */
async function checkFallbacks(
  ctx: ModelContext,
  projectId: string,
  fallbacks: string[],
  self: { id: string; label: string },
): Promise<void> {
  const issues: ValidationIssue[] = [];
  for (const [i, slug] of fallbacks.entries()) {
    const loc = ['body', 'fallbacks', i];
    if (slug === self.id || slug === self.label) {
      issues.push({ loc, msg: 'A model cannot be its own fallback', type: 'value_error' });
    } else if (splitFrontierSlug(slug)) {
      if (slug.endsWith('/')) issues.push({ loc, msg: `'${slug}' names no model`, type: 'value_error' });
    } else if (slug.includes('/') || !(await repo.findModel(ctx.db, projectId, slug))) {
      issues.push({
        loc,
        msg: `Unknown model '${slug}': use openai/<name>, anthropic/<name> or a registered model`,
        type: 'value_error',
      });
    }
  }
  if (issues.length) throw ApiError.validation(issues);
}

/**
 * A credential travels in an HTTP header (`Authorization: Bearer …`, `x-api-key`): anything but visible
 * ASCII (a line break, a control byte, a space, a non-ASCII letter) would make every call fail upstream,
 * so it is refused here, naming the field.
 */
function checkCredential(apiKey: string): void {
  if (/^[\x21-\x7e]+$/.test(apiKey)) return;
  throw ApiError.invalid(
    ['body', 'api_key'],
    'api_key must be visible ASCII characters only (no spaces, line breaks or control characters): it is sent in an HTTP header',
  );
}

function sealKey(ctx: ModelContext, id: string, apiKey: string | null | undefined) {
  if (!apiKey) return { api_key_encrypted: null, api_key_last4: null };
  checkCredential(apiKey);
  return { api_key_encrypted: encryptSecret(ctx.secretKey, apiKey, id), api_key_last4: lastFour(apiKey) };
}

export async function registerModel(
  ctx: RegistryContext,
  projectId: string,
  body: RegisterModel,
): Promise<Model> {
  const id = newId('mdl');
  const baseUrl = await checkBaseUrl(ctx, body.base_url);
  const fallbacks = body.fallbacks ?? [];
  await checkFallbacks(ctx, projectId, fallbacks, { id, label: body.label });
  const now = nowIso();
  const row: repo.ModelRow = {
    id,
    project_id: projectId,
    label: body.label,
    provider: body.provider ?? 'openai-compatible',
    base_url: baseUrl,
    upstream_model: body.upstream_model ?? body.label,
    ...sealKey(ctx, id, body.api_key),
    input_price_per_mtok: body.input_price_per_mtok ?? null,
    output_price_per_mtok: body.output_price_per_mtok ?? null,
    context_window: body.context_window ?? null,
    rpm_limit: body.requests_per_minute ?? null,
    api: body.api ?? 'chat',
    cache_ttl_seconds: body.cache_ttl_seconds ?? null,
    tpm_limit: body.tokens_per_minute ?? null,
    default_parameters: JSON.stringify(body.default_parameters ?? {}),
    fallbacks: JSON.stringify(fallbacks),
    metadata: JSON.stringify(body.metadata ?? {}),
    created_at: now,
    updated_at: now,
  };
  await repo.insertModel(ctx.db, row);
  return toModel(row);
}

export async function patchModel(
  ctx: RegistryContext,
  projectId: string,
  ref: string,
  body: PatchModel,
): Promise<Model> {
  const row = await requireRegistered(ctx, projectId, ref);
  const patch: Parameters<typeof repo.updateModel>[2] = { updated_at: nowIso() };
  if (body.base_url !== undefined) {
    patch.base_url = await checkBaseUrl(ctx, body.base_url);
    // A stored credential is never sent to a host it was not given for: moving hosts needs it again.
    const moved = new URL(patch.base_url).host !== new URL(row.base_url).host;
    if (moved && row.api_key_encrypted !== null && body.api_key === undefined) {
      throw ApiError.invalid(
        ['body', 'api_key'],
        'Field required when base_url moves to another host: give the credential again, or null for none',
        'missing',
      );
    }
  }
  if (body.label !== undefined) patch.label = body.label;
  if (body.provider !== undefined) patch.provider = body.provider;
  if (body.upstream_model !== undefined) patch.upstream_model = body.upstream_model;
  if (body.api_key !== undefined) Object.assign(patch, sealKey(ctx, row.id, body.api_key));
  if (body.input_price_per_mtok !== undefined) patch.input_price_per_mtok = body.input_price_per_mtok;
  if (body.output_price_per_mtok !== undefined) patch.output_price_per_mtok = body.output_price_per_mtok;
  if (body.context_window !== undefined) patch.context_window = body.context_window;
  if (body.requests_per_minute !== undefined) patch.rpm_limit = body.requests_per_minute;
  if (body.api !== undefined) patch.api = body.api;
  if (body.cache_ttl_seconds !== undefined) patch.cache_ttl_seconds = body.cache_ttl_seconds;
  if (body.tokens_per_minute !== undefined) patch.tpm_limit = body.tokens_per_minute;
  if (body.default_parameters !== undefined)
    patch.default_parameters = JSON.stringify(body.default_parameters ?? {});
  if (body.metadata !== undefined) patch.metadata = JSON.stringify(body.metadata ?? {});
  if (body.fallbacks !== undefined) {
    const fallbacks = body.fallbacks ?? [];
    await checkFallbacks(ctx, projectId, fallbacks, { id: row.id, label: body.label ?? row.label });
    patch.fallbacks = JSON.stringify(fallbacks);
  }
  await repo.updateModel(ctx.db, row.id, patch);
  return toModel({ ...row, ...patch });
}

export async function deleteModel(ctx: ModelContext, projectId: string, id: string): Promise<{ id: string }> {
  const row = await repo.findModel(ctx.db, projectId, id);
  if (!row || row.id !== id) throw ApiError.notFound('Model', id);
  await repo.deleteModel(ctx.db, row.id);
  return { id: row.id };
}
