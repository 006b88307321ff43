import type { ModelApi } from '../../db/schema.js';

export type { ModelApi };

/** Provider kinds a model can be served by. */
export type ProviderKind = 'openai-compatible' | 'anthropic' | 'gemini';

/** Generation defaults a registered model applies to generation calls. */
export type DefaultParameters = Record<string, unknown>;

/**
 * Everything needed to call one model: where, how, with which credential, and what it costs. Produced
 * by `resolveModel` (src/catalog/models/resolve.ts) from `openai/<name>`, `anthropic/<name>`, `gemini/<name>` or a
 * registered model's label/id; consumed by the provider layer (src/inference/).
 */
export interface ResolvedModel {
  /** The slug the caller used (`openai/gpt-4o-mini`, or the registered label). */
  slug: string;
  /** Registry id for registered models, null for frontier models. */
  modelId: string | null;
  provider: ProviderKind;
  /** Origin + path prefix, e.g. `https://api.openai.com/v1` or `http://127.0.0.1:8000/v1`. */
  baseUrl: string;
  /**
   * What an OpenAI-compatible upstream speaks for generation: `chat` completions, or the `responses` API
   * (Responses-API calls then go natively; chat and messages calls keep using chat completions).
   */
  api: ModelApi;
  /** The model name sent upstream. */
  upstreamModel: string;
  /** Decrypted credential, or null when the upstream needs none. Never logged or returned. */
  apiKey: string | null;
  /** USD per million tokens; null when unknown (cost then reads 0). */
  inputPricePerMtok: number | null;
  outputPricePerMtok: number | null;
  defaultParameters: DefaultParameters;
  /** Slugs to try, in order, when this model's upstream is unavailable. */
  fallbacks: string[];
  /** Registered upstreams are re-checked against the upstream safety policy on every connection. */
  checkAddress: boolean;
  /**
   * Per-minute budgets of the calls evaluation runs make to the model, across all workers (null: none).
   * Registered models only; the gateway route does not apply them.
   */
  limits: { rpm: number | null; tpm: number | null };
  /** A registered model's default response-cache TTL (seconds): its gateway calls are cached. */
  cacheTtlSeconds?: number | null;
}

/** Whether a registered model's base URL may be used, and why not. */
export type UpstreamVerdict = { ok: true } | { ok: false; reason: string };

/**
 * The upstream safety check a registration runs on a base URL (the network rules, what its host name
 * resolves to, and this server's own addresses); built by the composition root from inference/egress.
 */
export type UpstreamUrlCheck = (url: string) => Promise<UpstreamVerdict>;
