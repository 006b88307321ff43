import OpenAI, { toFile } from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type MockUpstream, startMockUpstream } from '../fixtures/mock-upstream.js';
import { isErrorShape } from '../helpers/fuzz-requests.js';
import { type Harness, startHarness } from '../helpers/harness.js';
import { type DocumentedRoute, documentedRoutes, fillPath } from '../helpers/routes.js';
import { finishedRun } from '../openai-evals/eval-run.js';

/*
 * The route-permission matrix of the OpenAI- and Anthropic-style routes (#36), driven by the served
 * OpenAPI document: every documented route under these prefixes must have a row below (a new route
 * without one fails). For each route, a key lacking its permission gets 403 in the route's own error
 * shape naming the permission; a key holding only the row's permissions succeeds (2xx, on real
 * resources); another project's key gets 404 for this project's ids, in the route's shape too.
 */

const PREFIXES = [
  '/v1/chat/completions',
  '/v1/responses',
  '/v1/embeddings',
  '/v1/messages',
  '/v1/evals',
  '/v1/files',
  '/v1/fine_tuning/alpha/graders',
];

/**
 * The one permission table of these routes: what the 403 names first, then anything else the route's
 * data needs (reading an eval run's rows needs what reading their source needs).
 */
const MATRIX: Record<string, string[]> = {
  'POST /v1/chat/completions': ['inference:write'],
  'GET /v1/chat/completions': ['logs:read'],
  'GET /v1/chat/completions/{completion_id}': ['logs:read'],
  'POST /v1/chat/completions/{completion_id}': ['logs:write'],
  'DELETE /v1/chat/completions/{completion_id}': ['logs:write'],
  'GET /v1/chat/completions/{completion_id}/messages': ['logs:read'],
  'POST /v1/responses': ['inference:write'],
  'GET /v1/responses/{id}': ['inference:read'],
  'DELETE /v1/responses/{id}': ['inference:write', 'inference:read'],
  'GET /v1/responses/{id}/input_items': ['inference:read'],
  'POST /v1/embeddings': ['inference:write'],
  'POST /v1/messages': ['inference:write'],
  'POST /v1/messages/count_tokens': ['inference:write'],
  'GET /v1/evals': ['evaluation:read'],
  'POST /v1/evals': ['evaluation:write'],
  'GET /v1/evals/{eval_id}': ['evaluation:read'],
  'POST /v1/evals/{eval_id}': ['evaluation:write'],
  'DELETE /v1/evals/{eval_id}': ['evaluation:write'],
  'GET /v1/evals/{eval_id}/runs': ['evaluation:read'],
  'POST /v1/evals/{eval_id}/runs': ['evaluation:write'],
  'GET /v1/evals/{eval_id}/runs/{run_id}': ['evaluation:read'],
  'POST /v1/evals/{eval_id}/runs/{run_id}': ['evaluation:write'],
  'DELETE /v1/evals/{eval_id}/runs/{run_id}': ['evaluation:write'],
  // The run here reads an uploaded file's rows: its output items need what reading the file needs.
  'GET /v1/evals/{eval_id}/runs/{run_id}/output_items': ['evaluation:read', 'data:read'],
  'GET /v1/evals/{eval_id}/runs/{run_id}/output_items/{output_item_id}': ['evaluation:read', 'data:read'],
  'GET /v1/files': ['data:read'],
  'POST /v1/files': ['data:write'],
  'GET /v1/files/{file_id}': ['data:read'],
  'DELETE /v1/files/{file_id}': ['data:write'],
  'GET /v1/files/{file_id}/content': ['data:read'],
  'POST /v1/fine_tuning/alpha/graders/run': ['evaluation:write'],
  'POST /v1/fine_tuning/alpha/graders/validate': ['evaluators:read'],
};

const paris = {
  type: 'string_check',
  name: 'paris',
  input: '{{sample.output_text}}',
  reference: 'Paris',
  operation: 'eq',
};
const rows = [{ item: { q: 'France' }, sample: { output_text: 'Paris' } }];
const question = [{ role: 'user', content: 'Capital of France?' }];

/** Valid bodies, so that a key with the right permission gets a 2xx. */
const BODIES: Record<string, unknown> = {
  'POST /v1/chat/completions': { model: 'gen', messages: question },
  'POST /v1/chat/completions/{completion_id}': { metadata: { checked: 'yes' } },
  'POST /v1/responses': { model: 'gen', input: 'Capital of France?' },
  'POST /v1/embeddings': { model: 'gen', input: 'France' },
  'POST /v1/messages': { model: 'gen', max_tokens: 20, messages: question },
  'POST /v1/messages/count_tokens': { model: 'gen', messages: question },
  'POST /v1/evals': {
    data_source_config: { type: 'custom', item_schema: { type: 'object' } },
    testing_criteria: [paris],
  },
  'POST /v1/evals/{eval_id}': { name: 'renamed' },
  'POST /v1/evals/{eval_id}/runs': {
    data_source: { type: 'jsonl', source: { type: 'file_content', content: rows } },
  },
  'POST /v1/evals/{eval_id}/runs/{run_id}': {},
  'POST /v1/fine_tuning/alpha/graders/run': { grader: paris, model_sample: 'Paris' },
  'POST /v1/fine_tuning/alpha/graders/validate': { grader: paris },
};

let h: Harness;
let mock: MockUpstream;
let routes: DocumentedRoute[];
/** This project's resources, by path parameter. */
const ids: Record<string, string> = {};

const sdk = (key: string) => new OpenAI({ apiKey: key, baseURL: `${h.url}/v1`, maxRetries: 0 });
const name = (r: DocumentedRoute) => `${r.method} ${r.template}`;

beforeAll(async () => {
  mock = await startMockUpstream({ reply: () => ({ text: 'Paris', promptTokens: 4, completionTokens: 1 }) });
  h = await startHarness();
  const model = await h.call('POST', '/v1/models', {
    body: { label: 'gen', provider: 'openai-compatible', base_url: mock.baseUrl, upstream_model: 'gen' },
  });
  expect(model.status, model.text).toBe(201);
  routes = (await documentedRoutes(h)).filter((r) => PREFIXES.some((p) => r.template.startsWith(p)));
  const admin = sdk(h.admin.key);
  ids.completion_id = (
    await admin.chat.completions.create({
      model: 'gen',
      messages: [{ role: 'user', content: 'Hi' }],
      store: true,
    })
  ).id;
  ids.id = (await admin.responses.create({ model: 'gen', input: 'Hi' })).id;
  const file = await admin.files.create({
    file: await toFile(Buffer.from(rows.map((r) => JSON.stringify(r)).join('\n')), 'rows.jsonl'),
    purpose: 'evals',
  });
  ids.file_id = file.id;
  const ev = await admin.evals.create(BODIES['POST /v1/evals'] as OpenAI.Evals.EvalCreateParams);
  ids.eval_id = ev.id;
  const run = await admin.evals.runs.create(ev.id, {
    data_source: { type: 'jsonl', source: { type: 'file_id', id: file.id } },
  });
  ids.run_id = run.id;
  await finishedRun(admin, ev.id, run.id);
  const items = await admin.evals.runs.outputItems.list(run.id, { eval_id: ev.id });
  ids.output_item_id = items.data[0]!.id;
}, 60_000);
afterAll(async () => {
  await h?.close();
  await mock?.close();
});

const pathOf = (r: DocumentedRoute, fill?: (param: string) => string) =>
  fillPath(r.template, fill ?? ((p) => ids[p] ?? 'x'));

/** The permission a 403 names: in the envelope's details, or in Anthropic's message. */
function named(r: DocumentedRoute, body: any): string | undefined {
  if (r.template.startsWith('/v1/messages')) {
    expect(body.error.type, name(r)).toBe('permission_error');
    return /'([a-z]+:[a-z*]+)'/.exec(body.error.message)?.[1];
  }
  expect(body.error.code, name(r)).toBe('permission_denied');
  return body.error.details?.required;
}

/** Reads before writes, writes before deletes; an eval's runs before the eval. */
function order(a: DocumentedRoute, b: DocumentedRoute): number {
  const rank = (r: DocumentedRoute) => ({ GET: 0, POST: 1, DELETE: 2 })[r.method] ?? 3;
  return rank(a) - rank(b) || b.params.length - a.params.length;
}

describe('the route-permission matrix of the OpenAI- and Anthropic-style routes', () => {
  it('has a row for every documented route under their prefixes, and no row without a route', () => {
    const documented = routes.map(name).sort();
    expect(documented).toEqual(Object.keys(MATRIX).sort());
  });

  it('refuses a key lacking the permission: 403 in the route’s own shape, naming the permission', async () => {
    // A key with every permission but those the route's row starts with.
    for (const r of routes) {
      const [needed, ...rest] = MATRIX[name(r)]!;
      const [resource] = needed!.split(':');
      const others = ['metrics:read', 'keys:read', ...rest, ...(resource === 'logs' ? [] : ['logs:*'])];
      const key = (await h.key(others)).key;
      const res = await h.call(r.method, pathOf(r), {
        key,
        body: BODIES[name(r)] ?? (r.hasBody ? {} : undefined),
      });
      expect(res.status, `${name(r)}: ${res.text}`).toBe(403);
      expect(isErrorShape(403, res.body, pathOf(r), r.method), `${name(r)}: ${res.text}`).toBe(true);
      expect(named(r, res.body), name(r)).toBe(needed);
    }
  });

  it('lets a key holding only the row’s permissions succeed, on this project’s resources', async () => {
    for (const r of [...routes].sort(order)) {
      const key = (await h.key(MATRIX[name(r)]!)).key;
      if (name(r) === 'POST /v1/files') {
        const file = await sdk(key).files.create({
          file: await toFile(Buffer.from(JSON.stringify(rows[0])), 'more.jsonl'),
          purpose: 'evals',
        });
        expect(file).toMatchObject({ object: 'file', purpose: 'evals' });
        continue;
      }
      const res = await h.call(r.method, pathOf(r), { key, body: BODIES[name(r)] });
      if (name(r) === 'GET /v1/files/{file_id}/content') {
        expect(res.headers.get('content-type')).toMatch(/^application\/jsonl/);
        expect(res.text).toContain('Paris');
      }
      expect(res.status, `${name(r)}: ${res.text}`).toBeGreaterThanOrEqual(200);
      expect(res.status, `${name(r)}: ${res.text}`).toBeLessThan(300);
    }
  });

  it("answers another project's key 404 for this project's ids, in the route's shape", async () => {
    const other = (await h.key(['*'], 'openai-permissions-other')).key;
    // Created afresh: the success pass above deleted some.
    const admin = sdk(h.admin.key);
    const fresh: Record<string, string> = { ...ids };
    fresh.completion_id = (
      await admin.chat.completions.create({
        model: 'gen',
        messages: [{ role: 'user', content: 'Hi' }],
        store: true,
      })
    ).id;
    fresh.id = (await admin.responses.create({ model: 'gen', input: 'Hi' })).id;
    fresh.file_id = (
      await admin.files.create({
        file: await toFile(Buffer.from(JSON.stringify(rows[0])), 'f.jsonl'),
        purpose: 'evals',
      })
    ).id;
    const ev = await admin.evals.create(BODIES['POST /v1/evals'] as OpenAI.Evals.EvalCreateParams);
    fresh.eval_id = ev.id;
    const run = await admin.evals.runs.create(ev.id, {
      data_source: { type: 'jsonl', source: { type: 'file_content', content: rows } },
    } as OpenAI.Evals.RunCreateParams);
    fresh.run_id = run.id;
    await finishedRun(admin, ev.id, run.id);
    fresh.output_item_id = (await admin.evals.runs.outputItems.list(run.id, { eval_id: ev.id })).data[0]!.id;
    const withIds = routes.filter((r) => r.params.length > 0);
    expect(withIds.length).toBeGreaterThan(10);
    for (const r of withIds) {
      const path = pathOf(r, (p) => fresh[p] ?? 'x');
      const res = await h.call(r.method, path, { key: other, body: BODIES[name(r)] });
      expect(res.status, `${name(r)}: ${res.text}`).toBe(404);
      expect(isErrorShape(404, res.body, path, r.method), `${name(r)}: ${res.text}`).toBe(true);
    }
    // Still there for their own project.
    expect((await h.call('GET', `/v1/evals/${fresh.eval_id}`)).status).toBe(200);
    expect((await h.call('GET', `/v1/chat/completions/${fresh.completion_id}`)).status).toBe(200);
  });
});
