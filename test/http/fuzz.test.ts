import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createFuzzer, isErrorShape } from '../helpers/fuzz-requests.js';
import { type Harness, registerStubModel, startHarness } from '../helpers/harness.js';
import { type DocumentedRoute, documentedRoutes } from '../helpers/routes.js';

/**
 * 2,000 malformed requests spread over every documented route, generated from a fixed seed by the
 * generator `npm run fuzz` uses (test/helpers/fuzz-requests.ts): random and mistyped bodies, huge
 * numbers, deep nesting, invalid UTF-8, wrong content types and encodings, compressed bodies, odd
 * headers, query strings and path segments, other projects' ids. No response may be a 5xx, and every
 * response must match the contract.
 */
const SEED = 0x5eed_e7a1;
const OPENAI_STYLE =
  /^[A-Z]+ \/v1\/(chat\/completions|responses|embeddings|messages|evals|files|fine_tuning\/alpha\/graders)/;
const REQUESTS = 2000;
const CONCURRENCY = 6;
const { generate, openAiValid } = createFuzzer(SEED);
let foreignIds: string[] = [];

let h: Harness;
let routes: DocumentedRoute[];
beforeAll(async () => {
  h = await startHarness();
  routes = await documentedRoutes(h);
  // Something to find under the path segment `x`.
  await h.call('POST', '/v1/containers', { body: { label: 'x' } });
  await registerStubModel(h, 'm');
  await h.call('POST', '/v1/evaluators', { body: { type: 'judge', model: 'm', prompt: 'p', name: 'x' } });
  await h.call('POST', '/v1/annotation-queues', { body: { name: 'x', evaluators: ['x'] } });
  // Resources of another project, whose ids the fuzzer puts in paths.
  const other = (await h.key(['*'], 'fuzz-other')).key;
  await registerStubModel(h, 'm', other);
  const c = await h.call('POST', '/v1/containers', { key: other, body: { label: 'x' } });
  const e = await h.call('POST', '/v1/evaluators', {
    key: other,
    body: { type: 'judge', model: 'm', prompt: 'p', name: 'x' },
  });
  const ev = await h.call('POST', '/v1/evals', {
    key: other,
    body: {
      data_source_config: { type: 'custom', item_schema: { type: 'object' } },
      testing_criteria: [
        {
          type: 'string_check',
          name: 'eq',
          input: '{{sample.output_text}}',
          reference: 'a',
          operation: 'eq',
        },
      ],
    },
  });
  foreignIds = [c.body.id, e.body.id, ev.body.id];
});
afterAll(async () => {
  await h.close();
});

describe('fuzzing every route', () => {
  it(`answers ${REQUESTS} malformed requests without a 5xx, within the contract`, {
    timeout: 120_000,
  }, async () => {
    const keys = [
      h.admin.key,
      null,
      (await h.key(['evaluators:read', 'containers:read'])).key,
      `eg_${'Z'.repeat(43)}`,
      'not a key',
    ];
    const documented = new Set(routes.map((r) => `${r.method} ${r.template}`));
    const requests = Array.from({ length: REQUESTS }, (_, i) =>
      generate(routes[i % routes.length]!, documented, keys, i, foreignIds),
    );
    const failures: string[] = [];
    const statuses = new Map<number, number>();
    /** The statuses each documented route answered. */
    const byRoute = new Map<string, Set<number>>();
    let next = 0;
    const worker = async () => {
      while (next < requests.length) {
        const i = next++;
        const r = requests[i]!;
        const what = `#${i} ${r.method} ${r.path.slice(0, 120)} ${r.headers['content-type'] ?? ''} ${String(r.raw ?? JSON.stringify(r.body) ?? '').slice(0, 80)}`;
        try {
          const res = await h.call(r.method, r.path, r);
          statuses.set(res.status, (statuses.get(res.status) ?? 0) + 1);
          const route = routes[i % routes.length]!;
          const seen = byRoute.get(`${route.method} ${route.template}`) ?? new Set<number>();
          byRoute.set(`${route.method} ${route.template}`, seen.add(res.status));
          if (res.status >= 500) failures.push(`${what} → ${res.status} ${res.text.slice(0, 200)}`);
          else if (res.status >= 400 && !(res.headers.get('content-type') ?? '').includes('application/json'))
            failures.push(`${what} → ${res.status} without a JSON body`);
          else if (res.status >= 400 && !isErrorShape(res.status, res.body, r.path, r.method))
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
    // (Fewer with every route added: the 2,000 requests are spread over all of them, about 13 a route, and
    // a mutated body rarely creates anything: at least one creation got through.)
    expect(statuses.get(201) ?? 0).toBeGreaterThan(0);
    // The OpenAI- and Anthropic-style routes are reached past authentication, and their valid-ish bodies
    // past validation: every such route answered something other than 401, and the ones whose body is
    // complete without a stored resource answered a success at least once.
    const openAiStyle = [...byRoute.keys()].filter((r) => OPENAI_STYLE.test(r));
    expect(openAiStyle.length).toBeGreaterThan(20);
    for (const r of openAiStyle)
      expect(
        [...byRoute.get(r)!].some((s) => s !== 401),
        r,
      ).toBe(true);
    for (const r of ['POST /v1/evals', 'POST /v1/fine_tuning/alpha/graders/validate']) {
      // Beside the ~13 fuzzed requests a route gets (which of them keep a valid body shifts with every
      // route added), one with its valid body unbroken: the route itself must answer it with a success.
      const [method = '', path = ''] = r.split(' ');
      const control = await h.call(method, path, { body: openAiValid[r]!(REQUESTS) });
      byRoute.get(r)!.add(control.status);
      expect(
        [...byRoute.get(r)!].some((s) => s >= 200 && s < 300),
        `${r}: ${[...byRoute.get(r)!]}`,
      ).toBe(true);
    }
  });
});
