/**
 * The published OpenAPI document is the route schemas plus what the validators cannot say exactly.
 * Schemas carry OpenAPI-only marks, which the validators ignore (Ajv runs with `strict: false`) and
 * which are turned into their published form here:
 *
 * - `x-default: <value>` becomes `default: <value>`. The defaults are document-only on purpose: the
 *   validator runs with `useDefaults`, so a `default` there would be inserted into request bodies and
 *   change what is stored and the request hash idempotency compares (src/runs/service.ts).
 * - `x-data-source: 'request' | 'resolved'` marks the one object schema that validates a data source
 *   (so that every problem is reported at its own field, and `type` defaults to `generate`). It is
 *   published as a `oneOf` of the three variants, each with its own required fields and
 *   `additionalProperties: false`. Each variant's `type` is a `const`, so at most one variant matches
 *   and the `oneOf` is exact. In a request the generate variant may omit `type` (the server's default),
 *   so `type` is not required in every variant and the `discriminator` keyword, which needs it to be,
 *   is left out; the `const`s discriminate. A resolved side on a run always has `type`, but the variants
 *   are inline schemas a discriminator mapping cannot name, so it has none either.
 * - Operations of routes that need a key (they name a permission) get the rate-limit headers of the
 *   contract (7.4) on every response but 401, which is answered before the rate budget is spent.
 */

export interface OpenApiDocument {
  paths?: Record<string, Record<string, { responses?: Record<string, Record<string, unknown>> }>>;
  [key: string]: unknown;
}

type Json = Record<string, unknown>;

/** Fastify's `/a/:b` as OpenAPI's `/a/{b}`. */
export function openApiPath(url: string): string {
  // A trailing wildcard (e.g. Gemini's `models/*`) is the parameter `{*}`, as the document names it.
  return url.replace(/:([A-Za-z0-9_]+)/g, '{$1}').replace(/\*$/, '{*}');
}

/** The data sources a run request names: each type's field, and the type a side without one has. */
const VARIANTS: Record<
  string,
  { field: string; isDefault?: true; optional?: string[]; also?: string[]; orElse?: string }
> = {
  dataset: { field: 'dataset', optional: ['version', 'split'] },
  container: { field: 'container' },
  // An experiment's generate side may name prompts instead of models (each version's own model).
  generate: { field: 'models', isDefault: true, optional: ['prompts', 'parameters'], orElse: 'prompts' },
  sessions: { field: 'container', optional: ['filter'] },
  traces: { field: 'container', optional: ['filter'] },
  tool_steps: { field: 'container', optional: ['filter'] },
  simulate: { field: 'models', also: ['user_model'], optional: ['max_turns', 'tools'] },
};
const RANGE_DEFAULT = '0:100';

const INTEGER = { type: 'integer' };
export const RATE_LIMIT_HEADERS: Record<string, Json> = {
  'X-RateLimit-Limit': {
    description:
      'The key’s burst: the most requests it may make at once, and the size of its budget when full.',
    schema: INTEGER,
  },
  'X-RateLimit-Remaining': {
    description: 'Requests the key may still make right now, after this one.',
    schema: INTEGER,
  },
  'X-RateLimit-Reset': {
    description: 'Unix time, in seconds, at which the key’s budget is full again.',
    schema: INTEGER,
  },
};
const RETRY_AFTER: Json = {
  description: 'Seconds to wait before the next request is accepted.',
  schema: INTEGER,
};

function dataSourceVariants(node: Json, kind: 'request' | 'resolved'): Json {
  const props = (node.properties ?? {}) as Record<string, Json>;
  const { 'x-data-source': _mark, properties: _p, required: _r, type: _t, ...rest } = node;
  const oneOf = Object.entries(VARIANTS).map(
    ([type, { field, isDefault, optional = [], also = [], orElse }]) => {
      const typeSchema: Json = { type: 'string', const: type };
      const range: Json =
        kind === 'request' ? { ...props.range, default: RANGE_DEFAULT } : { ...props.range };
      if (kind === 'request' && isDefault) typeSchema.default = type;
      const required = kind === 'resolved' ? ['type', field, 'range'] : isDefault ? [field] : ['type', field];
      // Fields a request of the type also requires (a resolved side shows them when it has them).
      if (kind === 'request') required.push(...also.filter((f) => props[f]));
      const extra = [...also, ...optional];
      // A request may give `orElse` instead of the field: either one is required.
      const either = kind === 'request' && orElse && props[orElse];
      return {
        type: 'object',
        title: `${type} data source`,
        properties: {
          type: typeSchema,
          [field]: props[field],
          range,
          ...Object.fromEntries(extra.filter((f) => props[f]).map((f) => [f, props[f]])),
        },
        required: either ? required.filter((f) => f !== field) : required,
        ...(either ? { anyOf: [{ required: [field] }, { required: [orElse] }] } : {}),
        additionalProperties: false,
      };
    },
  );
  return { ...rest, oneOf };
}

function transformSchemas(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(transformSchemas);
  if (value === null || typeof value !== 'object') return value;
  let node = value as Json;
  const mark = node['x-data-source'];
  if (mark === 'request' || mark === 'resolved') node = dataSourceVariants(node, mark);
  const out: Json = {};
  for (const [key, child] of Object.entries(node)) {
    if (key === 'x-default') out.default = child;
    else out[key] = transformSchemas(child);
  }
  return out;
}

/** The published document: see the comment at the top of this file. `keyed`: `method {path}` of keyed routes. */
export function finishDocument<T extends OpenApiDocument>(doc: T, keyed: ReadonlySet<string>): T {
  const out = transformSchemas(doc) as T;
  for (const [path, methods] of Object.entries(out.paths ?? {})) {
    for (const [method, operation] of Object.entries(methods)) {
      if (!keyed.has(`${method} ${path}`)) continue;
      for (const [status, response] of Object.entries(operation.responses ?? {})) {
        if (status === '401') continue;
        response.headers = {
          ...(response.headers as Json | undefined),
          ...RATE_LIMIT_HEADERS,
          ...(status === '429' ? { 'Retry-After': RETRY_AFTER } : {}),
        };
      }
    }
  }
  return out;
}
