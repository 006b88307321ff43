import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Harness, startHarness } from '../helpers/harness.js';
import { seeded } from '../helpers/random.js';
import { type DocumentedRoute, documentedRoutes } from '../helpers/routes.js';

/**
 * 1,000 malformed requests spread over every documented route, generated from a fixed seed: random
 * and mistyped bodies, huge numbers, deep nesting, invalid UTF-8, wrong content types, odd query
 * strings and path segments. No response may be a 5xx, and every response must match the contract.
 */
const SEED = 0x5eed_e7a1;
const REQUESTS = 1000;
const CONCURRENCY = 6;
const { int, pick, chance } = seeded(SEED);

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

/** Valid bodies of the foundation routes; the fuzzer breaks one field, so that requests reach the database. */
const VALID: Record<string, (i: number) => Record<string, unknown>> = {
  'POST /v1/containers': (i) => ({ label: `fuzz-${i}` }),
  'PATCH /v1/containers/{container}': () => ({ description: 'd' }),
  'POST /v1/evaluators': (i) => ({ type: 'judge', model: 'm', prompt: 'p', name: `fuzz-${i}` }),
  'PATCH /v1/evaluators/{evaluator}': () => ({ description: 'd' }),
  'POST /v1/api-keys': (i) => ({ name: `fuzz-${i}`, permissions: ['evaluators:read'] }),
};

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

interface FuzzRequest {
  /** Off for methods the path does not have: the router may then answer 400 for a bad path, not 404. */
  unchecked: boolean;
  method: string;
  path: string;
  key: string | null;
  raw?: string | Uint8Array;
  body?: unknown;
  headers: Record<string, string>;
}

/** Exactly the error envelope, or exactly the 422 shape (checked here too, for unchecked requests). */
function isErrorShape(status: number, body: any): boolean {
  const only = (o: unknown, keys: string[]) =>
    typeof o === 'object' && o !== null && Object.keys(o).every((k) => keys.includes(k));
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
  return (
    only(body, ['error']) &&
    only(body.error, ['code', 'message', 'details']) &&
    typeof body.error.code === 'string' &&
    typeof body.error.message === 'string' &&
    (body.error.details === undefined || typeof body.error.details === 'object')
  );
}

function generate(
  route: DocumentedRoute,
  documented: Set<string>,
  keys: (string | null)[],
  i: number,
): FuzzRequest {
  const method = chance(0.9) ? route.method : pick(['GET', 'POST', 'PATCH', 'DELETE', 'PUT', 'OPTIONS']);
  const path = route.template.replace(/\{[^}]+\}/g, () => pick(SEGMENTS)) + randomQuery();
  const headers: Record<string, string> = {};
  if (chance(0.05)) headers['x-request-id'] = pick(['', 'trace 1', 'x'.repeat(200)]);
  const key = chance(0.85) ? keys[0]! : pick(keys);
  const unchecked = !documented.has(`${method} ${route.template}`);
  const req: FuzzRequest = { unchecked, method, path, key, headers };
  if (method === 'GET' || (method === 'DELETE' && chance(0.7))) return req;
  if (VALID[`${method} ${route.template}`] && chance(0.5)) {
    req.body = nearlyValidBody(route, i);
    return req;
  }
  switch (int(7)) {
    case 0:
      req.body = chance(0.8) ? mutatedBody(route) : randomValue();
      break;
    case 1:
      req.raw = pick(RAW_JSON);
      break;
    case 2:
      req.raw = deepJson();
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

let h: Harness;
let routes: DocumentedRoute[];
beforeAll(async () => {
  h = await startHarness();
  routes = await documentedRoutes(h);
  // Something to find under the path segment `x`.
  await h.call('POST', '/v1/containers', { body: { label: 'x' } });
  await h.call('POST', '/v1/evaluators', { body: { type: 'judge', model: 'm', prompt: 'p', name: 'x' } });
});
afterAll(async () => {
  await h.close();
});

describe('fuzzing every route', () => {
  it(`answers ${REQUESTS} malformed requests without a 5xx, within the contract`, async () => {
    const keys = [
      h.admin.key,
      null,
      (await h.key(['evaluators:read', 'containers:read'])).key,
      `eg_${'Z'.repeat(43)}`,
      'not a key',
    ];
    const documented = new Set(routes.map((r) => `${r.method} ${r.template}`));
    const requests = Array.from({ length: REQUESTS }, (_, i) =>
      generate(routes[i % routes.length]!, documented, keys, i),
    );
    const failures: string[] = [];
    const statuses = new Map<number, number>();
    let next = 0;
    const worker = async () => {
      while (next < requests.length) {
        const i = next++;
        const r = requests[i]!;
        const what = `#${i} ${r.method} ${r.path.slice(0, 120)} ${r.headers['content-type'] ?? ''} ${String(r.raw ?? JSON.stringify(r.body) ?? '').slice(0, 80)}`;
        try {
          const res = await h.call(r.method, r.path, r);
          statuses.set(res.status, (statuses.get(res.status) ?? 0) + 1);
          if (res.status >= 500) failures.push(`${what} → ${res.status} ${res.text.slice(0, 200)}`);
          else if (res.status >= 400 && !(res.headers.get('content-type') ?? '').includes('application/json'))
            failures.push(`${what} → ${res.status} without a JSON body`);
          else if (res.status >= 400 && !isErrorShape(res.status, res.body))
            failures.push(`${what} → ${res.status} ${res.text.slice(0, 200)}`);
        } catch (err) {
          failures.push(`${what} → ${(err as Error).message.slice(0, 300)}`);
        }
      }
    };
    await Promise.all(Array.from({ length: CONCURRENCY }, worker));
    expect(failures.slice(0, 25)).toEqual([]);
    // The fuzzer reached past authentication and validation, not only into 401s.
    expect(statuses.get(401) ?? 0).toBeGreaterThan(0);
    expect(statuses.get(422) ?? 0).toBeGreaterThan(100);
    expect(statuses.get(400) ?? 0).toBeGreaterThan(20);
    expect(statuses.get(415) ?? 0).toBeGreaterThan(10);
    expect(statuses.get(200) ?? 0).toBeGreaterThan(50);
    expect(statuses.get(201) ?? 0).toBeGreaterThan(5);
  });
});
