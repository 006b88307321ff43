import { type Static, Type } from 'typebox';
import { FreeObject, Nullable } from '../../http/schemas.js';
import type { ModelApi } from '../../shared/wire-protocol.js';

/** No '/', so a label never collides with a provider slug (`openai/…`); no `mdl_` prefix, so never an id. */
export const MODEL_LABEL_PATTERN = '^(?!mdl_)[A-Za-z0-9][A-Za-z0-9._:-]{0,127}$';

const Label = Type.String({
  pattern: MODEL_LABEL_PATTERN,
  description:
    'Unique in the project and usable wherever a model slug is; letters, digits, . _ : -, up to 128 characters, not starting with mdl_',
});

const Provider = Type.Union(
  [Type.Literal('openai-compatible'), Type.Literal('anthropic'), Type.Literal('gemini')],
  {
    description:
      'Wire API of the upstream: an OpenAI-compatible server (vLLM, Ollama, …), Anthropic Messages, or ' +
      "Google's Gemini API (generateContent; base_url names the API version, e.g. " +
      'https://generativelanguage.googleapis.com/v1beta)',
  },
);

const Price = Type.Number({ minimum: 0, maximum: 1_000_000, description: 'USD per million tokens' });

/** Generation defaults applied to calls of the model; known fields are checked, others pass through. */
export const DefaultParameters = Type.Object(
  {
    temperature: Type.Optional(Type.Number({ minimum: 0, maximum: 2 })),
    top_p: Type.Optional(Type.Number({ minimum: 0, maximum: 1 })),
    max_tokens: Type.Optional(Type.Integer({ minimum: 1 })),
    seed: Type.Optional(Type.Integer()),
    system: Type.Optional(Type.String({ description: 'System prompt added before the messages' })),
    stop: Type.Optional(Type.Union([Type.String(), Type.Array(Type.String(), { maxItems: 16 })])),
  },
  { additionalProperties: true, description: 'temperature, max_tokens, top_p, seed, system, stop, …' },
);

/** A per-minute budget for the calls evaluation runs make to the model, across all workers; null: none. */
const PerMinute = (what: string) =>
  Type.Integer({
    minimum: 1,
    maximum: 10_000_000,
    description: `${what} per minute for evaluation-run calls to this model, across all workers (not the gateway route)`,
  });

const Fallbacks = Type.Array(Type.String({ minLength: 1, maxLength: 200 }), {
  maxItems: 8,
  description: 'Model slugs tried in order when this model is unavailable',
});

const Api = Type.Union(
  [Type.Literal('chat' satisfies ModelApi), Type.Literal('responses' satisfies ModelApi)],
  {
    description:
      'What the upstream speaks for generation: chat (completions, the default) or responses (Responses-API ' +
      'calls go to it natively). Anthropic models speak Messages and Gemini models generateContent whatever ' +
      'this says.',
  },
);

export const RegisterModel = Type.Object(
  {
    label: Label,
    provider: Type.Optional(Provider),
    base_url: Type.String({
      minLength: 1,
      maxLength: 2000,
      description: 'http(s) URL of the API root, e.g. http://10.0.0.5:8000/v1',
    }),
    upstream_model: Type.Optional(
      Type.String({ minLength: 1, maxLength: 200, description: 'Model name sent upstream; default: label' }),
    ),
    api_key: Type.Optional(
      Nullable(
        Type.String({
          minLength: 1,
          maxLength: 8192,
          description: 'Write-only; stored encrypted, never returned',
        }),
      ),
    ),
    input_price_per_mtok: Type.Optional(Nullable(Price)),
    output_price_per_mtok: Type.Optional(Nullable(Price)),
    context_window: Type.Optional(Nullable(Type.Integer({ minimum: 1, maximum: 100_000_000 }))),
    default_parameters: Type.Optional(Nullable(DefaultParameters)),
    fallbacks: Type.Optional(Nullable(Fallbacks)),
    requests_per_minute: Type.Optional(Nullable(PerMinute('Requests'))),
    tokens_per_minute: Type.Optional(Nullable(PerMinute('Tokens (prompt + completion)'))),
    cache_ttl_seconds: Type.Optional(
      Nullable(
        Type.Integer({
          minimum: 1,
          maximum: 2_592_000,
          description:
            'Caches gateway calls to the model for this many seconds (as X-Evalgate-Cache: use); null: off',
        }),
      ),
    ),
    api: Type.Optional(Api),
    metadata: Type.Optional(Nullable(FreeObject())),
  },
  { additionalProperties: false },
);
export type RegisterModel = Static<typeof RegisterModel>;

export const PatchModel = Type.Object(
  {
    label: Type.Optional(Label),
    provider: Type.Optional(Provider),
    base_url: Type.Optional(Type.String({ minLength: 1, maxLength: 2000 })),
    upstream_model: Type.Optional(Type.String({ minLength: 1, maxLength: 200 })),
    api_key: Type.Optional(
      Nullable(
        Type.String({ minLength: 1, maxLength: 8192, description: 'A new credential; null removes it' }),
      ),
    ),
    input_price_per_mtok: Type.Optional(Nullable(Price)),
    output_price_per_mtok: Type.Optional(Nullable(Price)),
    context_window: Type.Optional(Nullable(Type.Integer({ minimum: 1, maximum: 100_000_000 }))),
    default_parameters: Type.Optional(Nullable(DefaultParameters)),
    fallbacks: Type.Optional(Nullable(Fallbacks)),
    requests_per_minute: Type.Optional(Nullable(PerMinute('Requests'))),
    tokens_per_minute: Type.Optional(Nullable(PerMinute('Tokens (prompt + completion)'))),
    cache_ttl_seconds: Type.Optional(
      Nullable(
        Type.Integer({
          minimum: 1,
          maximum: 2_592_000,
          description:
            'Caches gateway calls to the model for this many seconds (as X-Evalgate-Cache: use); null: off',
        }),
      ),
    ),
    api: Type.Optional(Api),
    metadata: Type.Optional(Nullable(FreeObject())),
  },
  { additionalProperties: false },
);
export type PatchModel = Static<typeof PatchModel>;

/**
 * One model usable by the project, in the shape of the widely used model list (`id`, `object`, `created`,
 * `owned_by`) with Evalgate's fields alongside. `id` is the slug to send as `model`: `openai/<name>`,
 * `anthropic/<name>`, or a registered model's label (its registry id is `model_id`).
 */
export const Model = Type.Object({
  id: Type.String({ description: 'The slug to send as `model`' }),
  object: Type.Literal('model'),
  created: Type.Integer({ description: 'Unix seconds' }),
  owned_by: Type.String({ description: 'openai, anthropic, or the owning project id' }),
  kind: Type.Union([Type.Literal('frontier'), Type.Literal('registered')]),
  model_id: Nullable(Type.String({ description: 'Registry id (mdl_…) of a registered model' })),
  label: Nullable(Type.String()),
  provider: Provider,
  base_url: Nullable(Type.String({ description: 'Registered models only' })),
  upstream_model: Type.String(),
  has_api_key: Type.Boolean(),
  api_key_last4: Nullable(Type.String()),
  input_price_per_mtok: Nullable(Type.Number()),
  output_price_per_mtok: Nullable(Type.Number()),
  context_window: Nullable(Type.Integer()),
  default_parameters: FreeObject(),
  fallbacks: Type.Array(Type.String()),
  requests_per_minute: Nullable(Type.Integer({ description: 'Registered models only; null: no limit' })),
  tokens_per_minute: Nullable(Type.Integer({ description: 'Registered models only; null: no limit' })),
  api: Api,
  cache_ttl_seconds: Nullable(
    Type.Integer({ description: 'Default response-cache TTL (seconds) of calls to the model; null: none' }),
  ),
  price_as_of: Nullable(Type.String({ description: 'Date of the bundled price (frontier models)' })),
  price_source: Nullable(Type.String()),
  metadata: FreeObject(),
  created_at: Nullable(Type.String()),
  updated_at: Nullable(Type.String()),
});
export type Model = Static<typeof Model>;

export const ModelList = Type.Object({
  object: Type.Literal('list'),
  data: Type.Array(Model),
  total: Type.Integer({ minimum: 0 }),
});
export type ModelList = Static<typeof ModelList>;

export const ModelRefParam = Type.Object({
  model: Type.String({
    minLength: 1,
    maxLength: 300,
    description: 'Registered model id or label, or a frontier slug (URL-encoded, e.g. openai%2Fgpt-4o)',
  }),
});
export const ModelIdParam = Type.Object({
  id: Type.String({ minLength: 1, maxLength: 200, description: 'Registered model id (mdl_…)' }),
});
export const ModelDeleted = Type.Object({
  object: Type.Literal('model'),
  id: Type.String(),
  deleted: Type.Literal(true),
});
