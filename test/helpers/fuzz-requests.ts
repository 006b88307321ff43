import zlib from 'node:zlib';
import { seeded } from './random.js';
import type { DocumentedRoute } from './routes.js';

export interface FuzzRequest {
  /** Off for methods the path does not have: the router may then answer 400 for a bad path, not 404. */
  unchecked: boolean;
  method: string;
  path: string;
  key: string | null;
  raw?: string | Uint8Array;
  body?: unknown;
  headers: Record<string, string>;
}

/** The gateway's OpenAI-dialect routes (`METHOD /path`): their errors carry OpenAI's `type` and `param` too. */
const OPENAI_ROUTES = /^(POST \/v1\/(chat\/completions|embeddings)|[A-Z]+ \/v1\/responses(\/.*)?)$/;

/**
 * Exactly the error envelope, or exactly the 422 shape (checked here too, for unchecked requests); on
 * `/v1/messages` (the Anthropic dialect), exactly Anthropic's error shape; on the OpenAI-dialect routes,
 * the envelope with exactly OpenAI's `type` (a string) and `param` (a string or null) added.
 */
/** Google's error body: `{error: {code: <HTTP status>, message, status, details?}}`. */
function isGoogleError(body: any): boolean {
  const e = body?.error;
  return (
    typeof body === 'object' &&
    body !== null &&
    Object.keys(body).every((k) => k === 'error') &&
    Number.isInteger(e?.code) &&
    typeof e.message === 'string' &&
    typeof e.status === 'string' &&
    (e.details === undefined || Array.isArray(e.details))
  );
}

export function isErrorShape(status: number, body: any, path = '', method = ''): boolean {
  const only = (o: unknown, keys: string[]) =>
    typeof o === 'object' && o !== null && Object.keys(o).every((k) => keys.includes(k));
  // A method the route does not have is answered by the router, in the envelope.
  const route = path.split('?')[0] ?? '';
  // OTLP ingest (traces and logs) answers an unreadable body (400, 413) with OTLP's error body, google.rpc.Status.
  if (
    method === 'POST' &&
    (route === '/v1/traces' || route === '/v1/logs') &&
    (status === 400 || status === 413)
  ) {
    return (
      only(body, ['code', 'message', 'details']) &&
      Number.isInteger(body.code) &&
      typeof body.message === 'string'
    );
  }
  if (route === '/v1/messages' || route.startsWith('/v1/messages/')) {
    return (
      only(body, ['type', 'error']) &&
      body.type === 'error' &&
      only(body.error, ['type', 'message']) &&
      typeof body.error.type === 'string' &&
      typeof body.error.message === 'string'
    );
  }
  // Gemini's routes (everything under /v1beta/, and POST /v1/models/<model>:generateContent, where Google's
  // SDK calls by default) answer in Google's shape, so that its SDK raises its ApiError with the status.
  const gemini = route.startsWith('/v1beta/') || (method === 'POST' && /^\/v1\/models\/[^/]+$/.test(route));
  if (gemini && isGoogleError(body)) return true;
  if (status === 422) {
    return (
      only(body, ['detail']) &&
      Array.isArray(body.detail) &&
      body.detail.length > 0 &&
      body.detail.every(
        (d: any) =>
          only(d, ['loc', 'msg', 'type']) &&
          Array.isArray(d.loc) &&
          typeof d.msg === 'string' &&
          typeof d.type === 'string',
      )
    );
  }
  // (A path under them that no route serves answers 404/405 from the router, in the plain envelope.)
  const unrouted = (status === 404 || status === 405) && body?.error?.type === undefined;
  const openAi = !unrouted && OPENAI_ROUTES.test(`${method} ${route}`);
  if (openAi) {
    if (
      !(
        typeof body?.error?.type === 'string' &&
        (body.error.param === null || typeof body.error.param === 'string')
      )
    )
      return false;
  }
  return (
    only(body, ['error']) &&
    only(
      body.error,
      openAi ? ['code', 'message', 'details', 'type', 'param'] : ['code', 'message', 'details'],
    ) &&
    typeof body.error.code === 'string' &&
    typeof body.error.message === 'string' &&
    (body.error.details === undefined || typeof body.error.details === 'object')
  );
}

/**
 * Malformed requests over the documented routes, from a seed: random and mistyped bodies, huge numbers,
 * deep nesting, invalid UTF-8, wrong content types and encodings, compressed bodies (good, truncated,
 * mislabelled, bombs), odd headers, query strings and path segments, other projects' ids. Shared by the
 * fuzz test (test/http/fuzz.test.ts) and `npm run fuzz` (bench/fuzz.ts).
 */
export function createFuzzer(seed: number) {
  const { int, pick, chance } = seeded(seed);
  const STRINGS = [
    '',
    ' ',
    'a',
    'judge',
    'code',
    'pointwise',
    'pairwise',
    'evl_',
    'ctr_x',
    'def evaluate(sample, ground_truth, baseline):\n    return 1\n',
    'def evaluate(:',
    'évaluateur ✓ 🚀',
    '\u0000',
    'a\u0000b',
    '\ud800',
    '\uffff',
    '<script>',
    "' OR 1=1 --",
    '%00',
    '../..',
    'x'.repeat(300),
    'y'.repeat(10_000),
  ];
  const NUMBERS = [0, -1, 1, 0.5, -0, 100, 101, 1e308, -1e308, 2 ** 53 + 2, 2 ** 64, 5e-324];

  function randomValue(depth = 0): unknown {
    switch (int(depth > 3 ? 4 : 7)) {
      case 0:
        return pick(STRINGS);
      case 1:
        return pick(NUMBERS);
      case 2:
        return chance(0.5);
      case 3:
        return null;
      case 4:
        return Array.from({ length: int(4) }, () => randomValue(depth + 1));
      case 5:
        return Object.fromEntries(
          Array.from({ length: int(4) }, () => [pick(STRINGS), randomValue(depth + 1)]),
        );
      default:
        return { type: pick(['judge', 'code', 'x']), model: pick(STRINGS), prompt: pick(STRINGS) };
    }
  }

  /** A body shaped like the route's request schema, with fields dropped, mistyped or added. */
  function mutatedBody(route: DocumentedRoute): Record<string, unknown> {
    const schema = route.operation.requestBody?.content?.['application/json']?.schema ?? {};
    const body: Record<string, unknown> = {};
    for (const field of Object.keys(schema.properties ?? {})) {
      if (chance(0.5)) body[field] = randomValue();
    }
    if (chance(0.2)) body[pick(STRINGS)] = randomValue();
    return body;
  }

  const CHECK = {
    type: 'string_check',
    name: 'eq',
    input: '{{sample.output_text}}',
    reference: 'a',
    operation: 'eq',
  };
  const ROWS = [{ item: { q: 'a' }, sample: { output_text: 'a' } }];
  const question = (i: number) => [{ role: 'user', content: `fuzz ${i}` }];

  /** Valid bodies of the foundation routes; the fuzzer breaks one field, so that requests reach the database. */
  const VALID: Record<string, (i: number) => Record<string, unknown>> = {
    'POST /v1/containers': (i) => ({ label: `fuzz-${i}` }),
    'PATCH /v1/containers/{container}': () => ({ description: 'd' }),
    'POST /v1/evaluators': (i) => ({ type: 'judge', model: 'm', prompt: 'p', name: `fuzz-${i}` }),
    'PATCH /v1/evaluators/{evaluator}': () => ({ description: 'd' }),
    'POST /v1/api-keys': (i) => ({ name: `fuzz-${i}`, permissions: ['evaluators:read'] }),
    'POST /v1/chat/completions': (i) => ({
      model: 'openai/gpt-4o-mini',
      messages: [{ role: 'user', content: `fuzz ${i}` }],
      ...(i % 3 === 0 ? { stream: true } : {}),
    }),
  };

  /**
   * Valid bodies of the OpenAI- and Anthropic-style routes (beside the chat completion above), given to
   * half of their requests with one field broken, drawn from a second generator: the requests to every
   * other route stay exactly what the seed made them before these were added.
   */
  const OPENAI_VALID: Record<string, (i: number) => Record<string, unknown>> = {
    'POST /v1/chat/completions/{completion_id}': (i) => ({ metadata: { fuzz: String(i) } }),
    'POST /v1/responses': (i) => ({
      model: 'openai/gpt-4o-mini',
      input: `fuzz ${i}`,
      ...(i % 3 === 0 ? { stream: true } : {}),
    }),
    'POST /v1/embeddings': (i) => ({ model: 'openai/text-embedding-3-small', input: [`fuzz ${i}`] }),
    'POST /v1/messages': (i) => ({
      model: 'openai/gpt-4o-mini',
      max_tokens: 16,
      messages: question(i),
      ...(i % 3 === 0 ? { stream: true } : {}),
    }),
    'POST /v1/messages/count_tokens': (i) => ({ model: 'openai/gpt-4o-mini', messages: question(i) }),
    'POST /v1/evals': (i) => ({
      name: `fuzz-${i}`,
      data_source_config: { type: 'custom', item_schema: { type: 'object' } },
      testing_criteria: [CHECK],
    }),
    'POST /v1/evals/{eval_id}': (i) => ({ name: `fuzz-${i}`, metadata: { fuzz: String(i) } }),
    'POST /v1/evals/{eval_id}/runs': () => ({
      data_source: { type: 'jsonl', source: { type: 'file_content', content: ROWS } },
    }),
    'POST /v1/fine_tuning/alpha/graders/run': () => ({ grader: CHECK, model_sample: 'a', item: { q: 'a' } }),
    'POST /v1/fine_tuning/alpha/graders/validate': () => ({ grader: CHECK }),
  };
  const second = seeded(seed ^ 0x0a15eed);

  /** An OpenAI- or Anthropic-style request given a valid body with one field broken, half the time. */
  function withValidBody(req: FuzzRequest, route: DocumentedRoute, i: number): FuzzRequest {
    const valid = OPENAI_VALID[`${req.method} ${route.template}`];
    if (!valid || !second.chance(0.5)) return req;
    const body = valid(i);
    const fields = Object.keys(body);
    if (fields.length && second.chance(0.7)) body[second.pick(fields)] = second.pick(STRINGS);
    req.body = body;
    req.raw = undefined;
    delete req.headers['content-type'];
    delete req.headers['content-encoding'];
    return req;
  }

  function nearlyValidBody(route: DocumentedRoute, i: number): unknown {
    const valid = VALID[`${route.method} ${route.template}`];
    if (!valid) return mutatedBody(route);
    const body = valid(i);
    const fields = [
      ...Object.keys(route.operation.requestBody?.content?.['application/json']?.schema?.properties ?? {}),
    ];
    if (fields.length) body[pick(fields)] = chance(0.6) ? pick(STRINGS) : randomValue();
    return body;
  }

  /** JSON text the serializer could never produce: overflow, deep nesting, broken syntax. */
  const RAW_JSON = [
    '{"pass_threshold": 1e400, "type": "judge", "model": "m", "prompt": "p"}',
    '{"pass_threshold": -1e400}',
    '{"limit": 18446744073709551616, "label": 18446744073709551616}',
    '{"name": 1e-400}',
    '{"label": "a"',
    '{"label": "a",}',
    "{'label': 'a'}",
    '{"a": NaN}',
    '{"a": Infinity}',
    '\ufeff{"label": "bom"}',
    'null',
    '[]',
    '"text"',
    '0',
    '{"__proto__": {"admin": true}}',
    '{"constructor": {"prototype": {"x": 1}}}',
    '{"label": "\\ud800"}',
    '{"label": "\\u0000"}',
  ];

  const OVERSIZED = JSON.stringify({ label: 'x', description: 'a'.repeat(11 * 1024 * 1024) });

  function deepJson(): string {
    const levels = pick([65, 1000, 10_000]);
    return chance(0.5)
      ? `${'['.repeat(levels)}1${']'.repeat(levels)}`
      : `${'{"a":'.repeat(levels)}1${'}'.repeat(levels)}`;
  }

  function invalidUtf8(): Uint8Array {
    const prefix = new TextEncoder().encode('{"label": "');
    const junk = Array.from({ length: 1 + int(16) }, () =>
      pick([0xff, 0xfe, 0xc0, 0x80, 0xed, 0xa0, 0xf8, int(256)]),
    );
    return new Uint8Array([...prefix, ...junk, 0x22, 0x7d]);
  }

  /** Headers a client may send wrongly (fetch itself refuses bad framing headers such as transfer-encoding): odd authorization schemes, accept and encoding values. */
  const ODD_HEADERS: [string, string][] = [
    ['accept', 'text/html'],
    ['accept', '*/*;q=x'],
    ['accept-encoding', 'gzip;q=abc, br'],
    ['x-evalgate-container', '%00'],
    ['idempotency-key', 'x'.repeat(300)],
    ['idempotency-key', ''],
    ['x-forwarded-for', 'not an address'],
  ];
  const AUTHORIZATIONS = [
    'Bearer',
    'Bearer ',
    'Basic YTpi',
    'bearer x',
    'Bearer  a b',
    'Token abc',
    `Bearer ${'k'.repeat(5000)}`,
  ];

  const CODECS: Record<string, (b: Uint8Array) => Uint8Array> = {
    gzip: (b) => zlib.gzipSync(b),
    deflate: (b) => zlib.deflateSync(b),
    br: (b) => zlib.brotliCompressSync(b),
  };

  const bombs = new Map<string, Uint8Array>();
  /** 64 MiB of zeros, or a valid JSON object of 11 MiB (over the default 10 MiB body limit), compressed. */
  const bomb = (encoding: string, valid: boolean): Uint8Array => {
    const key = `${encoding} ${valid}`;
    const cached = bombs.get(key);
    if (cached) return cached;
    const plain = valid
      ? new TextEncoder().encode(JSON.stringify({ description: 'a'.repeat(11 * 1024 * 1024) }))
      : new Uint8Array(64 * 1024 * 1024);
    const b = CODECS[encoding]!(plain);
    bombs.set(key, b);
    return b;
  };

  /** A compressed body: well-formed, mislabelled, truncated, a bomb, or under an unknown encoding. */
  function compressed(req: FuzzRequest, route: DocumentedRoute, i: number): FuzzRequest {
    // JSON bodies are refused compressed (415); JSON-lines uploads take gzip.
    const lines = chance(0.5);
    const text = lines
      ? Array.from({ length: 1 + int(5) }, () =>
          chance(0.8) ? JSON.stringify({ input: pick(STRINGS), expected: randomValue() }) : pick(RAW_JSON),
        ).join('\n')
      : JSON.stringify(
          VALID[`${req.method} ${route.template}`] && chance(0.5)
            ? nearlyValidBody(route, i)
            : mutatedBody(route),
        );
    const json = new TextEncoder().encode(text);
    const encoding = pick(Object.keys(CODECS));
    let raw = CODECS[encoding]!(json);
    let header: string = encoding;
    switch (int(6)) {
      case 0:
        header = pick(['compress', 'x-gzip', 'zstd', 'gzip, gzip', 'identity, br', 'GZIP', '']);
        break;
      case 1:
        raw = raw.subarray(0, Math.max(1, raw.length >> 1));
        break;
      case 2:
        header = pick(Object.keys(CODECS).filter((e) => e !== encoding));
        break;
      case 3:
        // Must be cut at the body limit (413), not inflated into memory.
        raw = bomb(encoding, chance(0.5));
        break;
      case 4:
        raw = json;
        break;
      default:
    }
    req.raw = raw;
    req.headers['content-encoding'] = header;
    req.headers['content-type'] = lines
      ? pick(['application/x-ndjson', 'application/jsonl', 'application/x-jsonlines'])
      : pick(CONTENT_TYPES.slice(0, 3));
    if (lines && chance(0.5)) req.path = `${req.path}${req.path.includes('?') ? '&' : '?'}label=fuzz-${i}`;
    return req;
  }

  const CONTENT_TYPES = [
    'application/json',
    'application/json; charset=utf-8',
    'application/json; charset=latin1',
    'application/merge-patch+json',
    'text/plain',
    'text/json',
    'application/x-www-form-urlencoded',
    'multipart/form-data; boundary=zz',
    'application/xml',
    '*/*',
    'application/json;;;',
  ];

  const SEGMENTS = [
    'x',
    'missing',
    '%00',
    'a%00b',
    '%FF',
    '%E0%A4%A',
    '%',
    '%25',
    '%2F',
    'a%2Fb',
    '%20',
    'evl_',
    'ctr_',
    'key_',
    '%F0%9F%9A%80',
    ';',
    'a'.repeat(199),
    'a'.repeat(201),
    'a'.repeat(600),
    '1e400',
    '-1',
  ];
  const QUERY_VALUES = [
    '',
    '0',
    '-1',
    '1',
    '100',
    '101',
    '1e400',
    '18446744073709551616',
    '2.5',
    'abc',
    '%00',
    '%FF',
    '%',
    'null',
    'a'.repeat(500),
  ];

  function randomQuery(): string {
    const parts = Array.from({ length: int(4) }, () => {
      const key = pick([
        'limit',
        'offset',
        'container',
        'limit',
        'x',
        '__proto__',
        'constructor',
        'limit[]',
        '%00',
      ]);
      return chance(0.1) ? key : `${key}=${pick(QUERY_VALUES)}`;
    });
    return parts.length ? `?${parts.join('&')}` : chance(0.1) ? '?' : '';
  }

  function generate(
    route: DocumentedRoute,
    documented: Set<string>,
    keys: (string | null)[],
    i: number,
    foreignIds: readonly string[] = [],
  ): FuzzRequest {
    const method = chance(0.9) ? route.method : pick(['GET', 'POST', 'PATCH', 'DELETE', 'PUT', 'OPTIONS']);
    // Other projects' ids must answer 404, exactly as ids that do not exist.
    const segment = () => (foreignIds.length && chance(0.15) ? pick(foreignIds) : pick(SEGMENTS));
    const path = route.template.replace(/\{[^}]+\}/g, segment) + randomQuery();
    const headers: Record<string, string> = {};
    if (chance(0.05)) headers['x-request-id'] = pick(['', 'trace 1', 'x'.repeat(200)]);
    if (chance(0.05)) headers[pick(ODD_HEADERS)[0]] = pick(ODD_HEADERS)[1];
    const key = chance(0.85) ? keys[0]! : pick(keys);
    const unchecked = !documented.has(`${method} ${route.template}`);
    const req: FuzzRequest = { unchecked, method, path, key, headers };
    if (method === 'GET' || (method === 'DELETE' && chance(0.7))) return req;
    if (VALID[`${method} ${route.template}`] && chance(0.5)) {
      req.body = nearlyValidBody(route, i);
      return req;
    }
    if (chance(0.12)) return compressed(req, route, i);
    switch (int(7)) {
      case 0:
        req.body = chance(0.8) ? mutatedBody(route) : randomValue();
        break;
      case 1:
        req.raw = pick(RAW_JSON);
        break;
      case 2:
        // Deep nesting, or a JSON body over the default 10 MiB limit (413).
        req.raw = chance(0.3) ? OVERSIZED : deepJson();
        break;
      case 3:
        req.raw = invalidUtf8();
        break;
      case 4:
        // Empty bodies, with or without a JSON content type.
        req.raw = new Uint8Array();
        break;
      case 5:
        req.body = nearlyValidBody(route, i);
        break;
      default:
        req.raw = JSON.stringify(mutatedBody(route));
        headers['content-type'] = pick(CONTENT_TYPES);
        return req;
    }
    if (req.raw !== undefined && chance(0.85)) headers['content-type'] = pick(CONTENT_TYPES.slice(0, 4));
    return req;
  }

  /** With an authorization header instead of a key, sometimes. */
  function request(
    route: DocumentedRoute,
    documented: Set<string>,
    keys: (string | null)[],
    i: number,
    foreignIds: readonly string[] = [],
  ): FuzzRequest {
    const req = generate(route, documented, keys, i, foreignIds);
    withValidBody(req, route, i);
    if (chance(0.03)) {
      req.key = null;
      req.headers.authorization = pick(AUTHORIZATIONS);
    }
    return req;
  }

  return { generate: request, valid: VALID, openAiValid: OPENAI_VALID };
}
